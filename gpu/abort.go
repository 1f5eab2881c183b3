package gpu

import (
	"slices"
	"time"
)

// ReasonAborted is the failure reason of a request its client abandoned
// (pdemu serve: the HTTP client disconnected). An aborted request is not
// a failure of the cluster: it ends in state "aborted".
const ReasonAborted = "aborted"

// Abort makes request id leave the worker, as vLLM aborts a request whose
// client went away: it leaves the running batch or its queue, its KV is
// released (a session's resident prefix stays cached, idle and
// evictable, as vLLM's prefix cache keeps a freed request's blocks; a
// Fallback or Vanilla request's footprint is freed; a session's final
// turn frees the session), and it ends at once as failed with
// ReasonAborted (an EvFailed). An append-prefill chunk already on the GPU
// completes first (a forward pass is not interrupted): the request ends
// when it does. Abort reports whether the worker held the request; a
// Seed or Reseed request admitted here whose KV has not arrived yet is
// not held (Abort it again once it arrives).
func (w *DecodeWorker) Abort(now time.Duration, id int64) bool {
	if !w.holds(id) {
		return false // and the worker is not advanced: its timings stay its own
	}
	w.advance(now)
	if j := w.cur; j != nil && j.Req.ID == id {
		if w.curChunk > 0 {
			j.aborting = true // ends with its pass (advance)
			return true
		}
		w.cur = nil
		w.abortEnd(now, j, true)
		w.kick(now)
		return true
	}
	for _, q := range []*[]*Job{&w.running, &w.prefillQ, &w.ready} {
		if i := slices.IndexFunc(*q, func(j *Job) bool { return j.Req.ID == id }); i >= 0 {
			j := (*q)[i]
			*q = slices.Delete(*q, i, i+1)
			if q == &w.ready && noRoomNeeded(j) {
				w.readyGo--
			}
			w.aggOK = false // the running batch may have changed
			w.abortEnd(now, j, true)
			return true
		}
	}
	if i := slices.IndexFunc(w.waitRoom, func(j *Job) bool { return j.Req.ID == id }); i >= 0 {
		// Nothing reserved yet.
		j := w.waitRoom[i]
		w.waitRoom = slices.Delete(w.waitRoom, i, i+1)
		w.abortEnd(now, j, false)
		return true
	}
	return false
}

// holds reports whether request id is on the worker (running, queued or
// in its append-prefill).
func (w *DecodeWorker) holds(id int64) bool {
	match := func(j *Job) bool { return j.Req.ID == id }
	return w.cur != nil && w.cur.Req.ID == id || slices.ContainsFunc(w.running, match) ||
		slices.ContainsFunc(w.prefillQ, match) || slices.ContainsFunc(w.ready, match) || slices.ContainsFunc(w.waitRoom, match)
}

// abortEnd releases an aborted job's KV (held: it had a reservation or a
// session slot) and ends it.
func (w *DecodeWorker) abortEnd(now time.Duration, j *Job, held bool) {
	j.aborting = false
	if held {
		w.freed, w.freedAt = true, now
		switch {
		case j.footprint > 0:
			if j.reserved {
				w.setUsed(w.used - j.footprint)
			}
			j.footprint, j.reserved = 0, false
		default:
			if s := w.sess[j.Req.Session]; s != nil {
				s.active--
				s.lastUse = now
				if j.Req.Last && s.active <= 0 {
					w.dropResidency(j.Req.Session, s)
					w.out = append(w.out, Event{Kind: EvEvicted, Session: j.Req.Session, At: now})
				} else if s.active <= 0 {
					w.linkIdle(s)
				}
			}
		}
	}
	j.Failed, j.Done = ReasonAborted, now
	w.out = append(w.out, Event{Kind: EvFailed, Job: j, At: now})
	w.drainReady(now) // the slot and the memory it freed
}

// Abort makes request id leave the fused worker, as DecodeWorker.Abort:
// waiting for memory (nothing reserved), for its DRAM load (its KV
// reservation is released) or in the decode batch or its queues; it
// ends at once as failed with ReasonAborted, and requests waiting for the
// memory it held are admitted. It reports whether the worker held it.
func (f *FusedWorker) Abort(now time.Duration, id int64) bool {
	match := func(j *Job) bool { return j.Req.ID == id }
	if !slices.ContainsFunc(f.waitMem, match) && !slices.ContainsFunc(f.loading, match) && !f.d.holds(id) {
		return false // not advanced: an instance's timings stay its own
	}
	f.Advance(now)
	if i := slices.IndexFunc(f.waitMem, match); i >= 0 {
		j := f.waitMem[i]
		f.waitMem = slices.Delete(f.waitMem, i, i+1)
		f.d.abortEnd(now, j, false)
		return true
	}
	if i := slices.IndexFunc(f.loading, match); i >= 0 {
		j := f.loading[i]
		f.loading = slices.Delete(f.loading, i, i+1)
		f.d.abortEnd(now, j, true)
		return true
	}
	return f.d.Abort(now, id)
}

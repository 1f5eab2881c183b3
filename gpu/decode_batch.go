package gpu

import (
	"math"
	"time"

	"github.com/pdemu/pdemu/effect"
)

// The decode worker's continuous batching: mixed passes of an
// append-prefill chunk and one decode step, decode-only stretches modelled
// analytically between batch changes, completions, and the worker's
// Advance / Ready / NextEvent. Admission and KV accounting are in
// decode.go.

// kick starts the next mixed pass if prefill work is pending and no pass is
// in flight: a chunk of the current (or next queued) append-prefill plus
// one decode step of the running batch.
func (w *DecodeWorker) kick(now time.Duration) {
	if w.curChunk > 0 {
		return
	}
	if w.cur == nil {
		if len(w.prefillQ) == 0 {
			return
		}
		w.cur = w.prefillQ[0]
		w.prefillQ = dropFront(w.prefillQ, 1)
		w.cur.PrefillStart, w.cur.DPrefillStart = now, now
		w.cur.chunkDone = 0
	}
	j := w.cur
	w.curChunk = max(1, min(w.cfg.ChunkTokens, j.PrefillTokens-j.chunkDone))
	var pass Pass
	pass.AddPrefill(w.curChunk, j.CachedTokens+j.chunkDone)
	pass.AddDecode(len(w.running), w.context())
	w.curDec = len(w.running)
	if w.perf != nil {
		w.curEnd = now + w.perf.estimate(&pass).Total // Perf.StepTime without copying the Perf
	} else {
		w.curEnd = now + w.cost.StepTime(pass)
	}
}

// drainReady moves ready jobs into the batch while slots allow. Jobs whose
// KV is already reserved (admitted ones) go first come first served; a job
// that still needs room (Fallback/Vanilla) waits until it fits, and the
// ones needing room behind it wait too (FIFO among them), but it never
// blocks a reserved job: that could deadlock the pool.
func (w *DecodeWorker) drainReady(now time.Duration) {
	kept := w.ready[:0]
	blocked := false
	goLeft := w.readyGo // jobs needing no room on ready[i:]
	for i, j := range w.ready {
		if len(w.running) >= w.cfg.MaxRunning {
			// The batch only grows in this loop: every job left waits.
			// (A saturated worker used to walk its whole ready queue on
			// every call to find that out.)
			kept = keepRest(kept, w.ready, i)
			break
		}
		if !noRoomNeeded(j) {
			if blocked {
				if goLeft == 0 {
					// Only jobs needing room are left, and they wait
					// behind the blocked one (an overloaded worker used to
					// walk its whole queue on every call: 9 % of the
					// Mooncake 1P3D run).
					kept = keepRest(kept, w.ready, i)
					break
				}
				kept = append(kept, j)
				continue
			}
			w.evictFor(now, -1, j.footprint, 0, j.Req.ID)
			if w.used+j.footprint > w.cap {
				blocked = true
				kept = append(kept, j)
				continue
			}
			w.setUsed(w.used + j.footprint)
			j.reserved, j.KVReserved = true, now
		} else {
			goLeft--
		}
		w.join(now, j)
	}
	clear(w.ready[len(kept):])
	w.ready, w.readyGo = kept, goLeft
	w.afterFree()
}

// noRoomNeeded reports whether a ready job joins the batch without taking
// room: its KV is the session's or already reserved.
func noRoomNeeded(j *Job) bool { return j.footprint <= 0 || j.reserved }

// pushReady queues a job whose first token is ready.
func (w *DecodeWorker) pushReady(j *Job) {
	w.ready = append(w.ready, j)
	if noRoomNeeded(j) {
		w.readyGo++
	}
}

// keepRest appends ready[i:] to kept, a prefix of ready's array: nothing
// moves when no job before i left.
func keepRest(kept, ready []*Job, i int) []*Job {
	if len(kept) == i {
		return ready
	}
	return append(kept, ready[i:]...)
}

// afterFree lets requests waiting for memory in when a request finished.
// It runs after the loops that finish requests, never inside them.
func (w *DecodeWorker) afterFree() {
	for w.freed {
		w.freed = false
		t := w.freedAt
		w.admitRoom(t)
		if w.afterFinish != nil {
			w.afterFinish(t)
		}
	}
}

func (w *DecodeWorker) join(now time.Duration, j *Job) {
	j.FirstToken = now
	j.remaining = float64(j.Req.OutputLen - 1)
	w.out = append(w.out, Event{Kind: EvFirstToken, Job: j, At: now})
	if j.remaining <= 0 {
		w.finish(now, j)
		return
	}
	w.running = append(w.running, j)
	if w.aggOK {
		w.ctx += j.contextTokens()
		w.minRem = min(w.minRem, j.remaining)
	}
}

func (w *DecodeWorker) finish(now time.Duration, j *Job) {
	j.Done = now
	w.freed, w.freedAt = true, now
	if j.footprint > 0 {
		w.setUsed(w.used - j.footprint)
		j.footprint, j.reserved = 0, false
	} else if s := w.sess[j.Req.Session]; s != nil {
		s.active--
		s.lastUse = now
		if grown := j.Req.InputLen + j.Req.OutputLen; grown > s.tokens {
			// Output KV that was not reserved at admission.
			w.setUsed(w.used + grown - s.tokens)
			s.tokens = grown
		}
		if j.Req.Last && s.active == 0 {
			// The session's final turn: the client closes the session and
			// its KV is freed at once (reported like an eviction).
			w.evicted(now, s, EvictSessionEnd, -1)
			w.dropResidency(j.Req.Session, s)
		} else if s.active == 0 {
			w.linkIdle(s)
		}
	}
	w.out = append(w.out, Event{Kind: EvDone, Job: j, At: now})
}

// The running batch's aggregates, kept incrementally (issue 24): the KV
// tokens it attends over, Σ (input + output − ⌊remaining⌋), and its
// smallest remaining. Both are exact whatever the order of the updates
// (an integer sum and a minimum), so they equal a recomputation over the
// batch (decode_agg_test.go keeps that as the reference). Every change of
// a running job's remaining happens in a loop that visits the batch
// anyway (progress, a mixed pass, retire), which folds the aggregates in;
// join adds one job; anything else that changes the batch (Abort) drops
// them (aggOK false) and the next use recomputes them in one pass.

// aggCheck, set by a test, is called with every worker whose kept
// aggregates are about to be used, to compare them with a recomputation.
var aggCheck func(*DecodeWorker)

// contextTokens is the KV tokens j attends over while it decodes.
func (j *Job) contextTokens() int64 {
	return int64(j.Req.InputLen+j.Req.OutputLen) - int64(j.remaining)
}

// aggregates returns the running batch's context tokens and smallest
// remaining (+Inf for an empty batch).
func (w *DecodeWorker) aggregates() (int64, float64) {
	if aggCheck != nil && w.aggOK {
		aggCheck(w)
	}
	if !w.aggOK {
		w.ctx, w.minRem = 0, math.Inf(1)
		for _, j := range w.running {
			w.ctx += j.contextTokens()
			w.minRem = min(w.minRem, j.remaining)
		}
		w.aggOK = true
	}
	return w.ctx, w.minRem
}

// context is the KV tokens the running batch attends over.
func (w *DecodeWorker) context() int64 {
	ctx, _ := w.aggregates()
	return ctx
}

func (w *DecodeWorker) minRemaining() float64 {
	_, m := w.aggregates()
	return m
}

// stepTime is the decode step of the running batch. With a Perf cost (a
// pure function of its arguments) the last answer is kept: advance and
// the NextEvent after it ask for the same batch and context, and a batch
// that did not change costs nothing to ask again.
func (w *DecodeWorker) stepTime() time.Duration {
	n, ctx := len(w.running), w.context()
	if w.perf == nil {
		return w.cost.DecodeStepTime(n, ctx)
	}
	if !w.stepOK || w.stepN != n || w.stepCtx != ctx {
		w.stepN, w.stepCtx, w.stepOK = n, ctx, true
		var b Pass // Perf.DecodeStepTime without copying the Perf
		b.AddDecode(n, ctx)
		w.stepT = w.perf.estimate(&b).Total
	}
	return w.stepT
}

const eps = 1e-9

// advance runs the worker up to now.
func (w *DecodeWorker) advance(now time.Duration) {
	for {
		if w.curChunk > 0 {
			if w.curEnd > now {
				w.last = now // decodes advance only at the end of the mixed pass
				return
			}
			t, j := w.curEnd, w.cur
			// The pass decoded one token for the requests running when it began.
			w.ctx, w.minRem = 0, math.Inf(1)
			for i, r := range w.running {
				if i < w.curDec {
					r.remaining--
				}
				w.ctx += r.contextTokens()
				w.minRem = min(w.minRem, r.remaining)
			}
			w.aggOK = true
			w.last = t
			w.retire(t)
			j.chunkDone += w.curChunk
			w.curChunk = 0
			switch {
			case j.aborting: // aborted during its pass (Abort)
				w.cur = nil
				w.abortEnd(t, j, true)
			case j.chunkDone >= j.PrefillTokens:
				w.cur, j.DPrefillEnd = nil, t
				w.pushReady(j)
			}
			w.kick(t)
			w.drainReady(t)
			continue
		}
		if len(w.running) == 0 {
			w.last = now
			return
		}
		step := w.stepTime()
		minRem := w.minRemaining()
		tc := w.last + time.Duration(math.Ceil(minRem*float64(step)))
		if tc > now {
			if step > 0 {
				w.progress(float64(now-w.last) / float64(step))
			}
			w.last = now
			return
		}
		w.progress(minRem)
		w.last = tc
		w.retire(tc)
		w.drainReady(tc)
	}
}

// retire finishes the running requests that produced their last token.
func (w *DecodeWorker) retire(t time.Duration) {
	kept := w.running[:0]
	done := w.doneBuf[:0]
	w.doneBuf = nil // finish may call back into the worker (afterFinish): no sharing
	w.ctx, w.minRem = 0, math.Inf(1)
	for _, j := range w.running {
		if j.remaining <= eps {
			done = append(done, j)
		} else {
			kept = append(kept, j)
			w.ctx += j.contextTokens()
			w.minRem = min(w.minRem, j.remaining)
		}
	}
	w.aggOK = true
	clear(w.running[len(kept):])
	w.running = kept
	for _, j := range done {
		w.finish(t, j)
	}
	clear(done)
	w.doneBuf = done
	w.afterFree()
}

// progress advances every running request by steps decode steps.
func (w *DecodeWorker) progress(steps float64) {
	w.ctx, w.minRem = 0, math.Inf(1)
	for _, j := range w.running {
		j.remaining -= steps
		w.ctx += j.contextTokens()
		w.minRem = min(w.minRem, j.remaining)
	}
	w.aggOK = true
}

// Advance runs the worker up to now; Ready tells what happened.
func (w *DecodeWorker) Advance(now time.Duration) { w.advance(now) }

// Ready returns and clears the events produced since the last call (by
// Admit, Arrive, Run or Advance), with NextEvent as its wake-up. Out is
// reused: consume it before calling any other method.
func (w *DecodeWorker) Ready() effect.Ready[Event] {
	at, ok := w.NextEvent()
	return effect.Take(&w.out, at, ok)
}

// NextEvent is when Advance must be called next, if anything is pending.
func (w *DecodeWorker) NextEvent() (time.Duration, bool) {
	if w.curChunk > 0 {
		return w.curEnd, true
	}
	if len(w.running) == 0 {
		return 0, false
	}
	return w.last + time.Duration(math.Ceil(w.minRemaining()*float64(w.stepTime()))), true
}

package fleet

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pdemu/pdemu/effect"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
)

// hint is what the fleet remembers of a job beyond gpu.Job.
type hint struct {
	worker *worker
	remote bool
	hit    int
}

// prefixHit is how many leading blocks w holds by its published index.
func (f *Fleet) prefixHit(w *worker, blocks []uint64) int {
	n := 0
	for n < len(blocks) && w.blocks[blocks[n]] > 0 {
		n++
	}
	return n
}

// pull starts the KV transfer of decode job j from h's prefill worker.
func (f *Fleet) pull(now time.Duration, d *worker, j *gpu.Job, h *Handoff, hit int) {
	r := j.Req
	j.Mode, j.Unadmitted = policy.ModeSeed, true
	fail := func(reason string) {
		j.Failed, j.Done = reason, now
		f.end(now, d, j, OutFailed)
		f.leaveIfIdle(now, d)
	}
	p := f.byName[h.Engine]
	if p == nil || p.role != RolePrefill {
		fail(ReasonUnknownEngine)
		return
	}
	j.P = p.idx
	if p.state == StateGone {
		fail(ReasonEngineGone)
		return
	}
	held := f.holds[h.RequestID]
	if h.RequestID == "" {
		// Older proxies send no remote_request_id: the hold of this engine
		// for this very prompt, the oldest first.
		held = f.holdFor(h.Engine, r)
		if held != nil {
			h.RequestID = held.RequestID
		}
	}
	switch {
	case held == nil || held.Engine != h.Engine:
		fail(ReasonUnknownRequest)
		return
	case now > held.Expires:
		delete(f.holds, h.RequestID)
		fail(ReasonExpired)
		return
	case held.InputLen != r.InputLen || !slices.Equal(held.Blocks, r.Blocks) || (h.BlockIDs != nil && !slices.Equal(held.BlockIDs, h.BlockIDs)):
		fail(ReasonMismatch)
		return
	}
	delete(f.holds, h.RequestID) // read once: vLLM frees P's blocks after the read
	// The decode worker computes nothing: what it holds already is not
	// pulled (vLLM's local prefix hit), the rest comes over the link.
	local := min(hit*r.BlockTokens, r.InputLen)
	j.CachedTokens, j.PrefillTokens = local, 0
	j.TransferBytes = int64(r.InputLen-local) * p.bytes
	var n *nic
	for _, c := range p.nics {
		if _, ok := c.caps[d.name]; ok {
			n = c
			break
		}
	}
	if n == nil && len(p.nics) > 0 {
		n = p.nics[0]
	}
	j.TransferStart = now
	if n == nil {
		// No link modelled: the KV arrives at once.
		j.TransferEnd = now
		d.d.Arrive(now, j)
		f.stepDecode(now, d)
		return
	}
	n.jobs[uint64(r.ID)] = j
	n.bytes += j.TransferBytes
	n.nic.Start(now, uint64(r.ID), j.TransferBytes, n.caps[d.name])
	f.stepNIC(now, p, n)
}

// stepPrefill collects what prefill worker w finished by now.
func (f *Fleet) stepPrefill(now time.Duration, w *worker) {
	rd := advance[*gpu.Job](f, w, w.p, now)
	for _, j := range rd.Out {
		j.FirstToken, j.Done = j.PrefillEnd, j.PrefillEnd
		h := f.hints[j]
		f.emit(Out{Kind: OutFirst, At: j.PrefillEnd, Worker: w.name, Job: j, CachedBlocks: h.hit})
		var ho *Handoff
		if h.remote {
			ho = &Handoff{Engine: w.name, RequestID: fmt.Sprintf("pdemu-%s-%d", w.name, j.Req.ID),
				Blocks: j.Req.Blocks, InputLen: j.Req.InputLen, Expires: j.PrefillEnd + f.opts.HoldTimeout}
			ho.BlockIDs = make([]int, (j.Req.InputLen+j.Req.BlockTokens-1)/max(j.Req.BlockTokens, 1))
			for i := range ho.BlockIDs {
				ho.BlockIDs[i] = i
			}
			f.holds[ho.RequestID] = ho
			if len(f.holds) >= f.purgeAt {
				f.purge(j.PrefillEnd)
			}
		}
		f.endWith(j.PrefillEnd, w, j, OutDone, ho)
	}
	f.leaveIfIdle(now, w)
}

// engine is what advance needs of a worker whose prefix cache the fleet
// publishes: a prefill worker (ready: finished jobs) or a fused worker
// (ready: events).
type engine[T any] interface {
	Advance(now time.Duration)
	Ready() effect.Ready[T]
	TakeCacheChanges() []gpu.CacheChange
}

// advance moves w's engine e to now, publishes its prefix-cache changes
// and returns what it made ready.
func advance[T any](f *Fleet, w *worker, e engine[T], now time.Duration) effect.Ready[T] {
	e.Advance(now)
	rd := e.Ready()
	for _, ch := range e.TakeCacheChanges() {
		f.prefillKV(w, ch)
	}
	return rd
}

// stepFused collects what fused worker w did by now: its events (first
// token, done, failed), not a prefill worker's finished jobs; the end of a
// job is one endEvent.
func (f *Fleet) stepFused(now time.Duration, w *worker) {
	rd := advance[gpu.Event](f, w, w.fu, now)
	for _, ev := range rd.Out {
		switch ev.Kind {
		case gpu.EvFirstToken:
			f.emit(Out{Kind: OutFirst, At: ev.At, Worker: w.name, Job: ev.Job, CachedBlocks: f.hints[ev.Job].hit})
		case gpu.EvDone, gpu.EvFailed:
			f.endEvent(w, ev)
		}
	}
	f.leaveIfIdle(now, w)
}

// fusedCol is fused worker w's index in the outputs' decode column (after
// every decode worker ever created: Names).
func (f *Fleet) fusedCol(w *worker) int { return -1 - w.idx }

// prefillKV publishes one change of a prefill worker's prefix cache.
func (f *Fleet) prefillKV(w *worker, ch gpu.CacheChange) {
	// Stored: the blocks of the chain not published yet, as runs of the
	// chain (each with its parent).
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		o := Out{Kind: OutKV, At: ch.At, Worker: w.name, Stored: append([]uint64(nil), ch.Stored[start:end]...)}
		if start > 0 {
			o.Parent, o.HasParent = ch.Stored[start-1], true
		}
		f.emit(o)
		start = -1
	}
	for i, b := range ch.Stored {
		if w.blocks[b] > 0 {
			flush(i)
			continue
		}
		w.blocks[b] = 1
		if start < 0 {
			start = i
		}
	}
	flush(len(ch.Stored))
	var rm []uint64
	for _, b := range ch.Removed {
		if w.blocks[b] > 0 {
			delete(w.blocks, b)
			rm = append(rm, b)
		}
	}
	if len(rm) > 0 {
		f.emit(Out{Kind: OutKV, At: ch.At, Worker: w.name, Removed: rm})
	}
}

// stepNIC delivers the transfers of NIC n (of prefill worker p) that
// ended by now.
func (f *Fleet) stepNIC(now time.Duration, p *worker, n *nic) {
	n.nic.Advance(now)
	rd := n.nic.Ready()
	for _, c := range rd.Out {
		j := n.jobs[c.ID]
		delete(n.jobs, c.ID)
		if j == nil {
			continue
		}
		j.TransferEnd = c.At
		if c.Err != nil {
			j.Failed = "link: " + c.Err.Error()
		}
		d := f.hints[j].worker
		d.d.Arrive(c.At, j)
		f.stepDecode(c.At, d)
	}
	f.leaveIfIdle(now, p)
}

// stepDecode collects what decode worker w did by now and publishes the
// residency changes of the sessions concerned.
func (f *Fleet) stepDecode(now time.Duration, w *worker) {
	w.d.Advance(now)
	rd := w.d.Ready()
	touched := map[int32]bool{}
	for _, j := range w.inflight {
		touched[j.Req.Session] = true
	}
	var ends []gpu.Event
	for _, ev := range rd.Out {
		switch ev.Kind {
		case gpu.EvFirstToken:
			h := f.hints[ev.Job]
			f.emit(Out{Kind: OutFirst, At: ev.At, Worker: w.name, Job: ev.Job, CachedBlocks: h.hit})
		case gpu.EvDone, gpu.EvFailed:
			touched[ev.Job.Req.Session] = true
			ends = append(ends, ev)
		case gpu.EvEvicted:
			touched[ev.Session] = true
		}
	}
	f.decodeKV(now, w, touched)
	for _, ev := range ends {
		f.endEvent(w, ev)
	}
	f.leaveIfIdle(now, w)
}

// decodeKV compares the published blocks of the touched sessions of w
// with their residency and publishes the difference.
func (f *Fleet) decodeKV(now time.Duration, w *worker, touched map[int32]bool) {
	ss := slices.Sorted(maps.Keys(touched))
	var stored []Out
	var removed []uint64
	for _, s := range ss {
		cur, _ := w.d.ResidentBlocks(s)
		old := w.sess[s]
		if slices.Equal(cur, old) {
			continue
		}
		for _, b := range old {
			if w.blocks[b]--; w.blocks[b] <= 0 {
				delete(w.blocks, b)
				removed = append(removed, b)
			}
		}
		if cur == nil {
			delete(w.sess, s)
		} else {
			w.sess[s] = cur
		}
		start := -1
		for i, b := range cur {
			w.blocks[b]++
			if w.blocks[b] == 1 && !slices.Contains(removed, b) {
				if start < 0 {
					start = i
				}
				continue
			}
			if w.blocks[b] == 1 {
				// Removed above by this session's old prompt and back now:
				// not a change.
				removed = slices.DeleteFunc(removed, func(x uint64) bool { return x == b })
			}
			if start >= 0 {
				stored = append(stored, storedRun(now, w.name, cur, start, i))
				start = -1
			}
		}
		if start >= 0 {
			stored = append(stored, storedRun(now, w.name, cur, start, len(cur)))
		}
	}
	for _, o := range stored {
		f.emit(o)
	}
	if len(removed) > 0 {
		f.emit(Out{Kind: OutKV, At: now, Worker: w.name, Removed: removed})
	}
}

func storedRun(at time.Duration, name string, chain []uint64, start, end int) Out {
	o := Out{Kind: OutKV, At: at, Worker: name, Stored: append([]uint64(nil), chain[start:end]...)}
	if start > 0 {
		o.Parent, o.HasParent = chain[start-1], true
	}
	return o
}

func (f *Fleet) emit(o Out) { f.out = append(f.out, o) }

// endEvent ends the job of a worker's EvDone or EvFailed; a job that
// completes with no first token recorded gets its end as its first token.
func (f *Fleet) endEvent(w *worker, ev gpu.Event) {
	kind := OutDone
	if ev.Kind == gpu.EvFailed {
		kind = OutFailed
	}
	if ev.Job.FirstToken == 0 && kind == OutDone {
		ev.Job.FirstToken = ev.Job.Done
	}
	f.end(ev.At, w, ev.Job, kind)
}

func (f *Fleet) end(at time.Duration, w *worker, j *gpu.Job, kind OutKind) {
	f.endWith(at, w, j, kind, nil)
}

func (f *Fleet) endWith(at time.Duration, w *worker, j *gpu.Job, kind OutKind, h *Handoff) {
	delete(w.inflight, j.Req.ID)
	hit := f.hints[j].hit
	delete(f.hints, j)
	if j.Done < j.Arrival {
		j.Done = at
	}
	f.ended = append(f.ended, j)
	f.emit(Out{Kind: kind, At: at, Worker: w.name, Job: j, Handoff: h, CachedBlocks: hit})
}

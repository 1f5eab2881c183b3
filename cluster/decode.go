package cluster

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
)

// decodeNode is a decode worker (gpu.DecodeWorker).
type decodeNode struct {
	outbox
	idx       int
	w         *gpu.DecodeWorker
	router    Addr
	collector Addr
	series    *metrics.Series
	f         *decodeFaults // nil: no faults
	sync      *dpSync       // D→P sync (dpsync.go); nil when off
	// aborts are the Aborts of requests this worker did not hold when they
	// came (they may still arrive), until their AbortDone.
	aborts map[int64]bool
	// evictions are this worker's evictions.csv rows (kvcause.go,
	// evictlog.go; nil: none yet); they outlive a crash, which replaces w.
	evictions *evictLog
	// evSink, when set, takes the rows instead (StreamEvictions).
	evSink func(metrics.EvictionRow) error
	evName string
	evMsgs []Evicted // the *Evicted messages' slab (kvcause.go)
}

func (n *decodeNode) Handle(now time.Duration, msg any) Ready {
	if n.f != nil {
		if rd, ok := n.faultHandle(now, msg); ok {
			return rd
		}
	}
	switch m := msg.(type) {
	case Admit:
		m.Job.D = n.idx
		mode, reason := n.w.Admit(now, m.Job)
		if n.f != nil && mode != policy.ModeNone {
			n.f.admitted(m.Job, mode)
		}
		if mode != policy.ModeNone {
			// The router does not touch the job until it hears back.
			m.Job.Tries, m.Job.Reasons = m.DS.Tries+1, m.DS.Reasons
		}
		m.D, m.Mode, m.Reason = n.idx, mode, reason
		n.send(n.router, AdmitReply{m.Admission}, 0)
	case KVReady:
		n.sync.arrived(m.Job)
		n.w.Arrive(now, m.Job)
	case RunJob:
		m.Job.D = n.idx
		n.w.Run(now, m.Job)
	case *Wake:
		n.w.Advance(now)
	case Abort:
		if !n.w.Abort(now, m.ID) {
			if n.aborts == nil {
				n.aborts = map[int64]bool{}
			}
			n.aborts[m.ID] = true
		}
	case AbortDone:
		delete(n.aborts, m.ID)
	}
	if len(n.aborts) > 0 {
		n.abortArrived(now, msg)
	}
	rd := n.w.Ready()
	for _, ev := range rd.Out {
		switch ev.Kind {
		case gpu.EvDone, gpu.EvFailed:
			if n.f != nil {
				delete(n.f.held, ev.Job.Req.ID)
				if ev.Job.FaultHit != 0 {
					n.send(n.router, Retry{Job: ev.Job}, 0)
					continue
				}
			}
			n.sync.ended(&n.outbox, ev.Job, n.idx)
			n.send(n.router, Finished{n.idx}, 0)
			n.send(n.collector, JobEnded{ev.Job}, 0)
		case gpu.EvEvicted:
			n.recordEviction(ev)
		}
	}
	n.series.Observe(now, n.w.Used(), n.w.Queued(), n.w.Running())
	return n.ready(rd.Wake, rd.HasWake)
}

// abortArrived aborts the job msg brought if its client went away before.
func (n *decodeNode) abortArrived(now time.Duration, msg any) {
	var j *gpu.Job
	switch m := msg.(type) {
	case Admit:
		j = m.Job
	case KVReady:
		j = m.Job
	case RunJob:
		j = m.Job
	default:
		return
	}
	if n.aborts[j.Req.ID] && n.w.Abort(now, j.Req.ID) {
		delete(n.aborts, j.Req.ID)
	}
}

// decodeFaults is a decode worker's fault state.
type decodeFaults struct {
	mk     func() *gpu.DecodeWorker // a fresh worker (restart)
	slow   *slowCost
	name   string
	down   int32 // fault id + 1 while crashed
	last   int32 // fault id + 1 of the last crash
	epoch  int32
	detect time.Duration
	held   map[int64]*gpu.Job // jobs the worker runs or queues
	resv   map[int64]int32    // Seed/Reseed admitted, KV not arrived: epoch of the admission
	stats  faultStatsByID
}

// handle is the decode node's fault path: it reports whether it handled
// msg completely.
func (n *decodeNode) faultHandle(now time.Duration, msg any) (Ready, bool) {
	f := n.f
	switch m := msg.(type) {
	case Crash:
		f.down = int32(m.Fault + 1)
		f.last = f.down
		f.epoch++
		n.w.Advance(now)
		st := f.stats.get(m.Fault)
		st.lostSessions = n.w.Sessions()
		ids := slices.Sorted(maps.Keys(f.held))
		reason := fmt.Sprintf("fault: decode %s crashed", f.name)
		for _, id := range ids {
			// Nobody hears from a dead node: the router notices the lost
			// request when its stream times out (the detection delay).
			hit(&n.outbox, n.router, f.held[id], f.down, reason, f.detect)
		}
		st.lost = len(ids)
		clear(f.held)
		clear(f.resv)
		n.recordCrash(now) // kvcause.go
		n.w = f.mk()
		n.series.Observe(now, 0, 0, 0)
		return n.ready(0, false), true
	case Restart:
		f.down = 0
		n.series.Observe(now, n.w.Used(), n.w.Queued(), n.w.Running())
		return n.ready(0, false), true
	case Slowdown:
		n.w.Advance(now)
		f.slow.factor = m.Factor
		return Ready{}, false
	}
	if f.down != 0 {
		reason := fmt.Sprintf("fault: decode %s down", f.name)
		switch m := msg.(type) {
		case Admit:
			// The admission RPC times out.
			m.Job.D = n.idx
			m.D, m.Mode, m.Reason = n.idx, policy.ModeNone, reason
			n.send(n.router, AdmitReply{m.Admission}, f.detect)
		case RunJob:
			m.Job.D = n.idx
			hit(&n.outbox, n.router, m.Job, f.down, reason, f.detect)
		case KVReady:
			// A transfer to a crashed node fails.
			hit(&n.outbox, n.router, m.Job, f.down, reason, 0)
		}
		return n.ready(0, false), true
	}
	switch m := msg.(type) {
	case KVReady:
		e, admitted := f.resv[m.Job.Req.ID]
		delete(f.resv, m.Job.Req.ID)
		if admitted && e != f.epoch {
			// Admitted before a crash: the reservation died with it.
			hit(&n.outbox, n.router, m.Job, f.last, fmt.Sprintf("fault: decode %s restarted (reservation lost)", f.name), 0)
			return n.ready(0, false), true
		}
		if m.Job.Failed == "" {
			f.held[m.Job.Req.ID] = m.Job
		}
	case RunJob:
		f.held[m.Job.Req.ID] = m.Job
	}
	return Ready{}, false
}

// admitted records an accepted admission.
func (f *decodeFaults) admitted(j *gpu.Job, mode policy.Mode) {
	switch mode {
	case policy.ModeDirect:
		f.held[j.Req.ID] = j
	case policy.ModeSeed, policy.ModeReseed:
		f.resv[j.Req.ID] = f.epoch
	}
}

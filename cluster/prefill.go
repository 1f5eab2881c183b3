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

// prefillNode is a prefill worker (gpu.PrefillWorker).
type prefillNode struct {
	outbox
	w      *gpu.PrefillWorker
	links  []Addr // by decode index
	series *metrics.Series
	f      *prefillFaults // nil: no faults
}

func (n *prefillNode) Handle(now time.Duration, msg any) Ready {
	if n.f != nil {
		if rd, ok := n.faultHandle(now, msg); ok {
			return rd
		}
	}
	switch m := msg.(type) {
	case Prefill:
		n.w.Submit(now, m.Job)
	case SessionForgotten: // forget.go
		n.w.Forget(m.S)
	default:
		n.handleSync(msg) // dpsync.go
	}
	n.w.Advance(now)
	rd := n.w.Ready()
	for _, j := range rd.Out {
		if n.f != nil && !n.f.out(&n.outbox, j) {
			continue
		}
		n.send(n.links[j.D], Transfer{j}, 0)
	}
	n.series.Observe(now, n.w.CacheUsed(), n.w.Queued(), n.w.Running())
	return n.ready(rd.Wake, rd.HasWake)
}

// prefillFaults is a prefill worker's fault state.
type prefillFaults struct {
	mk     func() *gpu.PrefillWorker
	name   string
	slow   *slowCost
	down   int32
	detect time.Duration
	h      *health
	idx    int
	router Addr
	decode []Addr
	held   map[int64]*gpu.Job
	stats  faultStatsByID
}

// drop hands a job this prefill worker cannot serve back: to its decode
// worker (which holds a reservation to release and then retries it) or
// straight to the router.
func (f *prefillFaults) drop(o *outbox, j *gpu.Job, id int32, reason string, delay time.Duration) {
	j.Failed, j.FaultHit = reason, id
	if !j.Unadmitted && (j.Mode == policy.ModeSeed || j.Mode == policy.ModeReseed) && f.h.d[j.D] == 0 {
		o.send(f.decode[j.D], KVReady{j}, delay)
		return
	}
	o.send(f.router, Retry{Job: j}, delay)
}

func (n *prefillNode) faultHandle(now time.Duration, msg any) (Ready, bool) {
	f := n.f
	switch m := msg.(type) {
	case Health:
		f.h.apply(m)
		return n.ready(0, false), true
	case Crash:
		f.down = int32(m.Fault + 1)
		n.w.Advance(now)
		ids := slices.Sorted(maps.Keys(f.held))
		for _, id := range ids {
			f.drop(&n.outbox, f.held[id], f.down, fmt.Sprintf("fault: prefill %s crashed", f.name), f.detect)
		}
		f.stats.get(m.Fault).lost = len(ids)
		clear(f.held)
		n.w = f.mk()
		n.series.Observe(now, 0, 0, 0)
		return n.ready(0, false), true
	case Restart:
		f.down = 0
		return n.ready(0, false), true
	case Slowdown:
		n.w.Advance(now)
		f.slow.factor = m.Factor
		return Ready{}, false
	case Prefill:
		if f.down != 0 {
			f.drop(&n.outbox, m.Job, f.down, fmt.Sprintf("fault: prefill %s down", f.name), f.detect)
			return n.ready(0, false), true
		}
		f.held[m.Job.Req.ID] = m.Job
	}
	if f.down != 0 {
		return n.ready(0, false), true
	}
	return Ready{}, false
}

// out decides what happens to a prefilled job: false when the path to
// its decode worker is known dead (the job was handed back).
func (f *prefillFaults) out(o *outbox, j *gpu.Job) bool {
	delete(f.held, j.Req.ID)
	// Its decode worker or its link (not this worker itself: it is up, or
	// it would not be sending, whatever the probe said last).
	id := f.h.d[j.D]
	if id == 0 {
		id = f.h.link[f.idx][j.D]
	}
	if id != 0 {
		f.drop(o, j, id, "fault: no path to decode worker", 0)
		return false
	}
	return true
}

package cluster

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy/bucket"
)

// bucketFaults is a bucket's fault state.
type bucketFaults struct {
	events  []FaultEvent
	mkLocal func() bucket.Local
	mkCore  []func() *gpu.FusedWorker
	slow    []*slowCost
	detect  time.Duration
	down    []int32 // per instance: fault id + 1 while crashed
	known   []int32 // per instance: what the local router knows
	epoch   []int32
	held    []map[int64]*gpu.Job // per instance
	routed  []map[int32][]uint64 // per instance: blocks routed there per session
	stats   faultStatsByID
}

// crashInst crashes instance i for fault id.
func (n *bucketNode) crashInst(now time.Duration, i int, id int) {
	f := n.f
	f.down[i] = int32(id + 1)
	f.epoch[i]++
	n.cores[i].Advance(now)
	ids := slices.Sorted(maps.Keys(f.held[i]))
	reason := fmt.Sprintf("fault: fused %s crashed", n.series[i].Worker)
	for _, r := range ids {
		n.local.Finished(i, now)
		// The global router notices the lost stream after the detection delay.
		hit(&n.outbox, n.router, f.held[i][r], f.down[i], reason, f.detect)
	}
	st := f.stats.get(id)
	st.lost += len(ids)
	st.lostSessions += len(f.routed[i])
	clear(f.held[i])
	n.cores[i] = f.mkCore[i]()
	n.series[i].Observe(now, 0, 0, 0)
}

func (n *bucketNode) faultHandle(now time.Duration, msg any) (Ready, bool) {
	f := n.f
	switch m := msg.(type) {
	case Crash:
		e := f.events[m.Fault]
		if e.Inst >= 0 {
			n.crashInst(now, e.Inst, m.Fault)
		} else {
			for i := range n.cores {
				n.crashInst(now, i, m.Fault)
			}
			n.local = f.mkLocal() // the meta-store is gone too
			for i := range f.routed {
				clear(f.routed[i])
			}
		}
		return n.ready(0, false), true
	case Restart:
		e := f.events[m.Fault]
		for i := range n.cores {
			if e.Inst < 0 || e.Inst == i {
				f.down[i] = 0
			}
		}
		return n.ready(0, false), true
	case Slowdown:
		e := f.events[m.Fault]
		n.cores[e.Inst].Advance(now)
		f.slow[e.Inst].factor = m.Factor
		return Ready{}, false
	case Health:
		e := f.events[m.Fault]
		if m.Up {
			f.known[e.Inst] = 0
			return n.ready(0, false), true
		}
		f.known[e.Inst] = int32(m.Fault + 1)
		f.stats.get(m.Fault).detected = now
		// The meta-store forgets what it placed on the dead instance.
		ss := slices.Sorted(maps.Keys(f.routed[e.Inst]))
		for _, s := range ss {
			n.local.Evicted(e.Inst, f.routed[e.Inst][s], now)
		}
		f.stats.get(m.Fault).reseeded += len(ss)
		clear(f.routed[e.Inst])
		return n.ready(0, false), true
	case Submit:
		if f.down[m.Inst] != 0 {
			// The instance died during the probe: the submission fails.
			hit(&n.outbox, n.router, m.Job, f.down[m.Inst], fmt.Sprintf("fault: fused %s down", n.series[m.Inst].Worker), f.detect)
			return n.ready(0, false), true
		}
	}
	return Ready{}, false
}

// pick overrides the local router's choice of an instance the bucket
// knows is down with the least loaded live one (lowest index on ties);
// -1 when none is live.
func (f *bucketFaults) pick(inst int, views []bucket.InstanceView) int {
	if inst < 0 || f.known[inst] == 0 {
		return inst
	}
	best := -1
	for i, v := range views {
		if f.known[i] != 0 {
			continue
		}
		if best < 0 || v.Load() < views[best].Load() {
			best = i
		}
	}
	return best
}

// submitted records job on instance inst.
func (f *bucketFaults) submitted(job *gpu.Job, inst int) {
	f.held[inst][job.Req.ID] = job
	f.routed[inst][job.Req.Session] = job.Req.Blocks
}

package cluster

import (
	"fmt"
	"slices"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy/bucket"
	"github.com/pdemu/pdemu/topology"
)

// Faults of fused deployments (see faults.go): a crashed fused worker (an
// instance of a bucket) loses its caches and its requests; a crashed
// bucket loses every instance's and its meta-store. The bucket's local
// router learns of an instance's crash (Health to the bucket), the global
// router of a whole bucket's; requests a fault hit go back to the global
// router (Retry), which dispatches them again within the retry budget.

// poolSchedule numbers a fused deployment's faults: each bucket's crash
// blocks, then each fused worker's faults, in file order.
func poolSchedule(spec *topology.Spec, pb *poolBuilt) []FaultEvent {
	var out []FaultEvent
	for bi, bs := range spec.Buckets {
		for _, f := range bs.Faults {
			out = append(out, FaultEvent{ID: len(out), Kind: f.Kind, Target: KindBucket, Index: bi, Inst: -1,
				Name: "bucket:" + bs.Name, At: f.At, End: f.End(), Chaos: f.Chaos})
		}
	}
	for bi, bb := range pb.buckets {
		for inst, gi := range bb.global {
			w := spec.Fused[gi]
			for _, f := range w.Faults {
				out = append(out, FaultEvent{ID: len(out), Kind: f.Kind, Target: KindBucket, Index: bi, Inst: inst,
					Name: w.Name, At: f.At, End: f.End(), Factor: f.Factor, Chaos: f.Chaos})
			}
		}
	}
	return out
}

// planPool plans a fused deployment's schedule.
func (in *injector) planPool() {
	const now = 0
	for _, e := range in.events {
		target := in.buckets[e.Index]
		if e.Kind == topology.FaultSlow {
			in.at(target, Slowdown{e.ID, e.Factor}, e.At-now)
			if e.End > 0 {
				in.at(target, Slowdown{e.ID, 1}, e.End-now)
			}
			continue
		}
		in.at(target, Crash{e.ID, e.Inst < 0}, e.At-now)
		if e.End > 0 {
			in.at(target, Restart{e.ID}, e.End-now)
		}
		h := Health{Fault: e.ID, Target: KindBucket, Index: e.Index}
		up := h
		up.Up = true
		// The bucket's local router learns of its instances, the global
		// router of whole buckets.
		to := target
		if e.Inst < 0 {
			to = in.router
		}
		in.at(to, h, e.At-now+in.detect)
		if e.End > 0 {
			in.at(to, up, e.End-now+in.detect)
		}
	}
}

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
	stats   map[int]*faultStats
}

func (f *bucketFaults) stat(id int) *faultStats {
	s := f.stats[id]
	if s == nil {
		s = &faultStats{detected: -1}
		f.stats[id] = s
	}
	return s
}

// crashInst crashes instance i for fault id.
func (n *bucketNode) crashInst(now time.Duration, i int, id int) {
	f := n.f
	f.down[i] = int32(id + 1)
	f.epoch[i]++
	n.cores[i].Advance(now)
	ids := make([]int64, 0, len(f.held[i]))
	for r := range f.held[i] {
		ids = append(ids, r)
	}
	slices.Sort(ids)
	reason := fmt.Sprintf("fault: fused %s crashed", n.series[i].Worker)
	for _, r := range ids {
		n.local.Finished(i, now)
		// The global router notices the lost stream after the detection delay.
		hit(&n.outbox, n.router, f.held[i][r], f.down[i], reason, f.detect)
	}
	st := f.stat(id)
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
		f.stat(m.Fault).detected = now
		// The meta-store forgets what it placed on the dead instance.
		ss := make([]int32, 0, len(f.routed[e.Inst]))
		for s := range f.routed[e.Inst] {
			ss = append(ss, s)
		}
		slices.Sort(ss)
		for _, s := range ss {
			n.local.Evicted(e.Inst, f.routed[e.Inst][s], now)
		}
		f.stat(m.Fault).reseeded += len(ss)
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

// globalFaults is the global router's fault state.
type globalFaults struct {
	down      []int32 // per bucket, as known
	budget    int
	detect    time.Duration
	collector Addr
	events    []FaultEvent
	stats     map[int]*faultStats
}

func (n *globalNode) faultHandle(now time.Duration, msg any) bool {
	f := n.f
	switch m := msg.(type) {
	case Health:
		e := f.events[m.Fault]
		if m.Up {
			f.down[e.Index] = 0
			return true
		}
		f.down[e.Index] = int32(m.Fault + 1)
		if f.stats[m.Fault] == nil {
			f.stats[m.Fault] = &faultStats{detected: now}
		}
		return true
	case Retry:
		j := m.Job
		id := int(j.FaultHit) - 1
		st := f.stats[id]
		if id >= 0 && st == nil {
			st = &faultStats{detected: -1}
			f.stats[id] = st
		}
		if j.Retries >= f.budget {
			if f.budget > 0 {
				j.Failed = fmt.Sprintf("%s (retry budget %d spent)", j.Failed, f.budget)
			}
			if len(j.RetryReasons) > 0 {
				j.Failed = "attempts: " + joinReasons(j.RetryReasons) + "; last: " + j.Failed
			}
			j.Done, j.D = now, -1
			if st != nil {
				st.failed++
			}
			n.send(f.collector, JobEnded{j}, 0)
			return true
		}
		if st != nil {
			st.retried++
		}
		nj := &gpu.Job{Req: j.Req, P: -1, D: -1, Arrival: j.Arrival, Retries: j.Retries + 1,
			RetryReasons: append(slices.Clip(j.RetryReasons), j.Failed)}
		n.newJob(now, nj)
		return true
	}
	return false
}

// wirePoolFaults gives a fused deployment's nodes their fault state when
// the scenario has faults.
func (c *Cluster) wirePoolFaults(spec *topology.Spec, pb *poolBuilt, g *globalNode, bns []*bucketNode) {
	events := poolSchedule(spec, pb)
	if len(events) == 0 {
		return
	}
	rec := spec.Recovery
	if rec.DetectionDelay <= 0 {
		rec.DetectionDelay = topology.DefaultDetectionDelay
	}
	cf := &clusterFaults{events: events}
	c.faults = cf
	c.driver.faults = &injector{events: events, detect: rec.DetectionDelay, router: c.driver.router, buckets: g.buckets}
	g.f = &globalFaults{down: make([]int32, len(bns)), budget: rec.RetryBudget, detect: rec.DetectionDelay,
		collector: c.driver.collector, events: events, stats: map[int]*faultStats{}}
	cf.stats = append(cf.stats, statsOf(g.f.stats))
	for bi, bn := range bns {
		bb := pb.buckets[bi]
		n := len(bn.cores)
		f := &bucketFaults{events: events, mkLocal: bb.mkLocal, mkCore: bb.mkCore, slow: bb.slow, detect: rec.DetectionDelay,
			down: make([]int32, n), known: make([]int32, n), epoch: make([]int32, n),
			held: make([]map[int64]*gpu.Job, n), routed: make([]map[int32][]uint64, n), stats: map[int]*faultStats{}}
		for i := range n {
			f.held[i], f.routed[i] = map[int64]*gpu.Job{}, map[int32][]uint64{}
		}
		bn.f = f
		cf.stats = append(cf.stats, statsOf(f.stats))
	}
}

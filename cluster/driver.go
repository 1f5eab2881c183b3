package cluster

import (
	"cmp"
	"slices"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/internal/idmap"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// driverNode releases the workload's requests (workload.Driver) and
// creates their Jobs.
type driverNode struct {
	outbox
	drv       *workload.Driver
	router    Addr
	collector Addr
	done      bool
	faults    *injector              // nil: no faults
	live      idmap.Window[*gpu.Job] // released, not ended, by request id (Cluster.InFlight)
	released  int
	jobs      []gpu.Job // newJob's slab
	// external: the run is open-ended (Cluster.OpenEnded): requests also
	// come from outside as Release messages, and the workload is not done
	// while open (until EndOfInput).
	external, open bool
}

// jobSlab is how many Jobs newJob allocates at once.
const jobSlab = 64

// newJob returns a zero Job from a slab allocated jobSlab at a time (one
// allocation per request was the driver's whole share of a run's). A
// slab stays in memory while any of its Jobs is referenced; Jobs are
// only ever handled by pointer, so sharing an array changes nothing else.
func (n *driverNode) newJob() *gpu.Job {
	if len(n.jobs) == 0 {
		n.jobs = make([]gpu.Job, jobSlab)
	}
	j := &n.jobs[0]
	n.jobs = n.jobs[1:]
	return j
}

func (n *driverNode) Handle(now time.Duration, msg any) Ready {
	var err error
	switch m := msg.(type) {
	case Start:
		err = n.drv.Start(now)
		if n.faults != nil {
			n.faults.start(&n.outbox, now)
		}
	case Release:
		job := n.newJob()
		*job = gpu.Job{Req: m.Req, P: -1, D: -1, Arrival: now}
		n.track(job)
		n.send(n.router, NewJob{job}, 0)
		err = n.drv.Released(m.Req, now)
	case RequestEnded:
		n.live.Delete(m.Req.ID)
		err = n.drv.Ended(m.Req, now)
	case EndOfInput:
		if n.open {
			n.open, n.done = false, true
			n.send(n.collector, DriverDone{Total: n.released}, 0)
		}
	case InjectTick:
		// The schedule runs while the workload does: an open-ended run's
		// until its input ends, however idle it is meanwhile, and on
		// while a request it released is in flight (one waiting for a
		// restart after the input ended would otherwise wait for ever).
		n.faults.tick(&n.outbox, now, n.open || n.live.Len() > 0 || (!n.done && !n.drv.Done()))
	}
	rels := n.drv.Ready()
	if err != nil {
		n.send(RunAddr, Failed{err}, 0)
		return n.ready(0, false)
	}
	for _, r := range rels.Out {
		n.send(n.self, Release{r.Req}, r.At-now)
	}
	if !n.done && !n.open && n.drv.Done() {
		n.done = true
		n.send(n.collector, DriverDone{Total: n.drv.Read()}, 0)
	}
	return n.ready(0, false)
}

// injector is the driver's part: it sends the schedule at Start.
type injector struct {
	events  []FaultEvent
	detect  time.Duration
	decode  []Addr
	prefill []Addr
	router  Addr
	buckets []Addr // fused deployments

	actions []action // the schedule's sends, by time (plan)
	next    int      // the first action not sent yet
	armed   bool     // an InjectTick is pending
}

// action is one send of the schedule: msg to to at emulated time at.
type action struct {
	at  time.Duration
	to  Addr
	msg any
}

// InjectTick is the driver's timer for the fault schedule's next actions.
type InjectTick struct{}

// injectHop bounds the time between two InjectTicks: the schedule is
// sent in steps so that a fault planned after the workload's end never
// keeps a timer pending beyond injectHop (which would stretch the run).
const injectHop = time.Second

func (in *injector) at(to Addr, msg any, at time.Duration) {
	in.actions = append(in.actions, action{at: at, to: to, msg: msg})
}

// start plans the schedule and arms the first tick.
func (in *injector) start(o *outbox, now time.Duration) {
	in.plan()
	slices.SortStableFunc(in.actions, func(a, b action) int { return cmp.Compare(a.at, b.at) })
	in.arm(o, now)
}

func (in *injector) arm(o *outbox, now time.Duration) {
	if in.armed || in.next >= len(in.actions) {
		return
	}
	in.armed = true
	o.send(o.self, InjectTick{}, min(in.actions[in.next].at, now+injectHop)-now)
}

// tick sends the actions due by now and, while the workload runs
// (running), arms the next tick.
func (in *injector) tick(o *outbox, now time.Duration, running bool) {
	in.armed = false
	for in.next < len(in.actions) && in.actions[in.next].at <= now {
		a := in.actions[in.next]
		o.send(a.to, a.msg, 0)
		in.next++
	}
	if running {
		in.arm(o, now)
	}
}

func (in *injector) plan() {
	if in.buckets != nil {
		in.planPool()
		return
	}
	const now = 0
	for _, e := range in.events {
		at := e.At - now
		var target Addr = -1
		switch e.Target {
		case KindDecode:
			target = in.decode[e.Index]
		case KindPrefill:
			target = in.prefill[e.Index]
		}
		if e.Kind == topology.FaultSlow {
			in.at(target, Slowdown{e.ID, e.Factor}, at)
			if e.End > 0 {
				in.at(target, Slowdown{e.ID, 1}, e.End-now)
			}
			continue
		}
		if target >= 0 {
			in.at(target, Crash{e.ID, true}, at)
			if e.End > 0 {
				in.at(target, Restart{e.ID}, e.End-now)
			}
		}
		// The health probe: the router and every prefill worker (which
		// stop sending towards the dead node or over the dead link).
		h := Health{Fault: e.ID, Target: e.Target, Index: e.Index, Ds: e.Ds}
		up := h
		up.Up = true
		for _, to := range append([]Addr{in.router}, in.prefill...) {
			in.at(to, h, at+in.detect)
			if e.End > 0 {
				in.at(to, up, e.End-now+in.detect)
			}
		}
	}
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

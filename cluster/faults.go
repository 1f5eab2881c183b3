package cluster

import (
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/topology"
)

// Faults (docs/MODEL.md §"Faults"). The scenario's node faults (crash,
// slow), link cuts and the chaos block's draws form one schedule of
// FaultEvents, numbered in a fixed order. The driver injects them: at
// Start it sends each target node its Crash/Restart/Slowdown at the
// fault's times, and the routers (and the prefill workers, which must not
// send over a dead link) a Health message DetectionDelay after the fault
// and after its end (the health probe). Failed admission RPCs, failed
// transfers and lost requests reach the router as messages too (a
// rejected AdmitReply, Retry); the router retries a request hit by a fault
// up to the retry budget, then ends it failed with the reasons of every
// attempt. Nothing here runs when the scenario has no fault: the nodes'
// fault state is nil and their hot paths unchanged.

// The fault messages.
type (
	// Crash makes a node lose its state and stop (fault Fault). Node: the
	// whole node (the actor runtime fails its actor, and the supervisor
	// restarts it), not one instance of a bucket.
	Crash struct {
		Fault int
		Node  bool
	}
	// Restart brings a crashed node back with fresh state.
	Restart struct{ Fault int }
	// Slowdown multiplies every forward pass of a node by Factor (1 ends
	// the slowdown).
	Slowdown struct {
		Fault  int
		Factor float64
	}
	// Health tells a router (or a prefill worker) that a node or link is
	// down or up again (the health probe's verdict).
	Health struct {
		Fault  int
		Target Kind  // KindDecode, KindPrefill or KindLink
		Index  int   // decode or prefill index (link: the prefill index)
		Ds     []int // KindLink: the decode indexes the dead NIC serves
		Up     bool
	}
	// Retry hands a request hit by a fault back to the router (Job.Failed
	// says why, Job.FaultHit which fault). Wait: the router's own timer
	// for a request that found no reachable decode worker, waiting for
	// the fault FaultHit to end; a wait is not a dispatch and spends no
	// retry budget.
	Retry struct {
		Job  *gpu.Job
		Wait bool
	}
)

// FaultEvent is one fault of the schedule.
type FaultEvent struct {
	ID     int
	Kind   string // topology.FaultCrash, topology.FaultSlow or topology.FaultCut
	Target Kind   // KindDecode, KindPrefill or KindLink
	Index  int    // decode or prefill index; link: prefill index
	Ds     []int  // link: decode indexes served by the NIC
	Inst   int    // KindBucket: the instance (-1: the whole bucket)
	Name   string // worker name, or prefill/device for a NIC
	At     time.Duration
	End    time.Duration // 0: never ends
	Factor float64       // slow
	Chaos  bool
}

// faultStats are what the nodes count per fault.
type faultStats struct {
	detected     time.Duration // -1: not (yet) detected
	lost         int           // requests on the node when it crashed (or in flight on the cut link)
	lostSessions int           // sessions whose KV the crash destroyed
	retried      int
	failed       int
	reseeded     int
}

// faultStatsByID is a node's faultStats by fault id.
type faultStatsByID map[int]*faultStats

// get returns fault id's stats, made (not yet detected) on first use.
func (m faultStatsByID) get(id int) *faultStats {
	s := m[id]
	if s == nil {
		s = &faultStats{detected: -1}
		m[id] = s
	}
	return s
}

// buildSchedule numbers the scenario's faults: decode workers, then
// prefill workers (each in file order, each worker's faults in time
// order), then the NICs' cuts in time order.
func buildSchedule(spec *topology.Spec, nics []topology.NIC, nicDs [][]int) []FaultEvent {
	var out []FaultEvent
	add := func(e FaultEvent) {
		e.ID = len(out)
		out = append(out, e)
	}
	for _, ws := range []struct {
		list []topology.Worker
		kind Kind
	}{{spec.Decode, KindDecode}, {spec.Prefill, KindPrefill}} {
		for i, w := range ws.list {
			for _, f := range w.Faults {
				add(FaultEvent{Kind: f.Kind, Target: ws.kind, Index: i, Name: w.Name, At: f.At, End: f.End(), Factor: f.Factor, Chaos: f.Chaos})
			}
		}
	}
	preIdx := map[string]int{}
	for i, w := range spec.Prefill {
		preIdx[w.Name] = i
	}
	for ni, n := range nics {
		var cur *FaultEvent
		for _, f := range n.Faults {
			switch f.Kind {
			case topology.FaultCut:
				if cur == nil {
					add(FaultEvent{Kind: topology.FaultCut, Target: KindLink, Index: preIdx[n.Prefill], Ds: nicDs[ni], Name: n.Prefill + "/" + n.Device, At: f.At, Chaos: f.Chaos})
					cur = &out[len(out)-1]
				}
			case topology.FaultRestore:
				if cur != nil {
					cur.End = max(f.At, cur.At+1)
					cur = nil
				}
			}
		}
	}
	return out
}

// slowCost is a worker's cost model under a Slowdown: every forward pass
// takes factor times as long.
type slowCost struct {
	gpu.Cost
	factor float64
}

func (c *slowCost) scale(d time.Duration) time.Duration {
	if c.factor == 1 {
		return d
	}
	return time.Duration(float64(d) * c.factor)
}

func (c *slowCost) PrefillTime(n, cached int) time.Duration {
	return c.scale(c.Cost.PrefillTime(n, cached))
}

func (c *slowCost) DecodeStepTime(b int, ctx int64) time.Duration {
	return c.scale(c.Cost.DecodeStepTime(b, ctx))
}

func (c *slowCost) StepTime(p gpu.Pass) time.Duration { return c.scale(c.Cost.StepTime(p)) }

// faultCost wraps p in a slowCost when w has slow faults (else p itself).
func faultCost(w topology.Worker, p gpu.Perf) (gpu.Cost, *slowCost) {
	for _, f := range w.Faults {
		if f.Kind == topology.FaultSlow {
			sc := &slowCost{Cost: p, factor: 1}
			return sc, sc
		}
	}
	return p, nil
}

// hit marks job failed by fault id for reason and hands it back to the router.
func hit(o *outbox, router Addr, j *gpu.Job, id int32, reason string, delay time.Duration) {
	j.Failed, j.FaultHit = reason, id
	o.send(router, Retry{Job: j}, delay)
}

// Faults of fused deployments (as above): a crashed fused worker (an
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

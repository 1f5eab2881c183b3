package cluster

import (
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/topology"
)

// HasFaults reports whether the run may have faults (its Faults may be
// non-empty): its outputs then need each request's arrival and TTFT
// (metrics.Recover).
func (c *Cluster) HasFaults() bool { return c.faults != nil }

// FaultTimes returns when each fault of the schedule happens (a run
// reaches some of them; metrics.NewTally tracks their recovery).
func (c *Cluster) FaultTimes() []time.Duration {
	if c.faults == nil {
		return nil
	}
	out := make([]time.Duration, len(c.faults.events))
	for i, e := range c.faults.events {
		out[i] = e.At
	}
	return out
}

// Faults returns every fault of the run with what it did, for faults.csv
// and summary.json (read it after the run; Recovery is filled in by
// metrics.Recover).
func (c *Cluster) Faults() []metrics.FaultRecord {
	if c.faults == nil {
		return nil
	}
	var out []metrics.FaultRecord
	for _, e := range c.faults.events {
		r := metrics.FaultRecord{ID: e.ID, Kind: e.Kind, Target: string(e.Target), Node: e.Name, At: e.At, End: -1,
			Factor: e.Factor, Chaos: e.Chaos, Detected: -1, Recovery: -1}
		if e.End > 0 {
			r.End = e.End
		}
		for _, get := range c.faults.stats {
			if s := get(e.ID); s != nil {
				r.Lost += s.lost
				r.LostSessions += s.lostSessions
				r.Retried += s.retried
				r.Failed += s.failed
				r.Reseeded += s.reseeded
				if s.detected >= 0 && (r.Detected < 0 || s.detected < r.Detected) {
					r.Detected = s.detected // the first node to notice
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// clusterFaults is what Cluster keeps of the fault machinery.
type clusterFaults struct {
	events []FaultEvent
	stats  []func(id int) *faultStats
}

func statsOf(m map[int]*faultStats) func(int) *faultStats {
	return func(id int) *faultStats { return m[id] }
}

// wireFaults gives the nodes of a P/D cluster their fault state when the
// scenario has faults (else it changes nothing) and returns each NIC's
// link fault state (nil entries without faults).
func (c *Cluster) wireFaults(spec *topology.Spec, b *built, rtr *routerNode, decs []*decodeNode, pres []*prefillNode) []*linkFaults {
	links := make([]*linkFaults, len(b.nics))
	nicDs := make([][]int, len(b.nics))
	for ni, n := range b.nics {
		n.rateCap.each(func(d int, _ float64) { nicDs[ni] = append(nicDs[ni], d) })
	}
	events := buildSchedule(spec, b.topoNICs, nicDs)
	if len(events) == 0 {
		return links
	}
	rec := spec.Recovery
	if rec.DetectionDelay <= 0 {
		rec.DetectionDelay = topology.DefaultDetectionDelay
	}
	cf := &clusterFaults{events: events}
	c.faults = cf
	np, nd := len(pres), len(decs)
	c.driver.faults = &injector{events: events, detect: rec.DetectionDelay, decode: rtr.decode, prefill: rtr.prefill, router: c.driver.router}
	rtr.f = &routerFaults{h: newHealth(np, nd), detect: rec.DetectionDelay, budget: rec.RetryBudget, collector: c.driver.collector,
		believed: make([]map[int32]struct{}, nd), reseed: map[int32]int{}, stats: map[int]*faultStats{},
		events: events, up: map[int]bool{}}
	for d := range rtr.f.believed {
		rtr.f.believed[d] = map[int32]struct{}{}
	}
	cf.stats = append(cf.stats, statsOf(rtr.f.stats))
	for i, d := range decs {
		d.f = &decodeFaults{mk: b.mkDecode[i], slow: b.slowD[i], name: spec.Decode[i].Name, detect: rec.DetectionDelay,
			held: map[int64]*gpu.Job{}, resv: map[int64]int32{}, stats: map[int]*faultStats{}}
		cf.stats = append(cf.stats, statsOf(d.f.stats))
	}
	for i, p := range pres {
		p.f = &prefillFaults{mk: b.mkPrefill[i], slow: b.slowP[i], name: spec.Prefill[i].Name, detect: rec.DetectionDelay,
			h: newHealth(np, nd), idx: i, router: c.driver.router, decode: rtr.decode, held: map[int64]*gpu.Job{}, stats: map[int]*faultStats{}}
		cf.stats = append(cf.stats, statsOf(p.f.stats))
	}
	for ni := range b.nics {
		lf := &linkFaults{}
		for _, e := range events {
			if e.Target == KindLink && e.Name == b.nics[ni].name {
				lf.cuts = append(lf.cuts, e)
			}
		}
		links[ni] = lf
	}
	return links
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

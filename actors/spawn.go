package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/topology"
)

// spawned is a cluster's actors once spawned: where requests go, the
// workers' series, and how to read the workers' reports after the run.
type spawned struct {
	router *actor.PID
	series []*metrics.Series
	report func(ask func(*actor.PID) any) ([]metrics.WorkerSummary, map[int32]policy.SessionStats)
}

func names(ws []topology.Worker) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Name
	}
	return out
}

// checkLinks: every prefill worker needs a link to every decode worker
// (topology validates this; a hand-built Spec may not).
func (b *built) checkLinks(spec *topology.Spec) error {
	for pi := range b.prefill {
		for d := range b.decode {
			linked := false
			for _, n := range b.nics {
				linked = linked || (n.prefill == pi && n.rateCap[d] > 0)
			}
			if !linked {
				return fmt.Errorf("no link from %s to %s", spec.Prefill[pi].Name, spec.Decode[d].Name)
			}
		}
	}
	return nil
}

// spawnPD spawns a disaggregated cluster: router, decode and prefill
// workers, one link actor per prefill NIC.
func spawnPD(spec *topology.Spec, b *built, mk func(string) node, spawn func(*node, handler) *actor.PID, colPID *actor.PID) *spawned {
	rtr := &routerActor{node: mk("router"), pol: b.pol}
	if a, ok := b.pol.(admissionPolicy); ok {
		rtr.adm = a
	}
	if f, ok := b.pol.(feedbackPolicy); ok {
		rtr.fb = f
	}
	var decs []*decodeActor
	var series []*metrics.Series
	for i, w := range b.decode {
		s := metrics.NewSeries(spec.Decode[i].Name, "decode")
		series = append(series, s)
		decs = append(decs, &decodeActor{node: mk(spec.Decode[i].Name), idx: i, w: w, series: s})
	}
	var pres []*prefillActor
	for i, w := range b.prefill {
		s := metrics.NewSeries(spec.Prefill[i].Name, "prefill")
		series = append(series, s)
		pres = append(pres, &prefillActor{node: mk(spec.Prefill[i].Name), w: w, series: s, links: make([]*actor.PID, len(b.decode))})
	}
	var links []*linkActor
	for _, n := range b.nics {
		links = append(links, &linkActor{node: mk("link:" + n.name), nic: n.nic, bytesPerToken: n.bytesTok,
			rateCap: n.rateCap, inflight: map[uint64]*gpu.Job{}})
	}
	rtrPID := spawn(&rtr.node, rtr)
	var decPIDs, prePIDs []*actor.PID
	for _, d := range decs {
		decPIDs = append(decPIDs, spawn(&d.node, d))
	}
	for _, p := range pres {
		prePIDs = append(prePIDs, spawn(&p.node, p))
	}
	for i, l := range links {
		pid := spawn(&l.node, l)
		l.decode = decPIDs
		n := b.nics[i]
		for d, c := range n.rateCap {
			if c > 0 {
				pres[n.prefill].links[d] = pid
			}
		}
	}
	rtr.prefill, rtr.decode = prePIDs, decPIDs
	for _, d := range decs {
		d.router, d.collector = rtrPID, colPID
	}
	if spec.Router.DPSync { // D→P incremental KV sync (dpsync.go)
		for _, d := range decs {
			d.sync = &dpSync{prefill: prePIDs, backup: map[int32]int{}}
		}
		for i, l := range links {
			l.sync = &linkSync{prefill: prePIDs[b.nics[i].prefill], flying: map[uint64]syncReqMsg{}}
		}
	}
	return &spawned{router: rtrPID, series: series, report: func(ask func(*actor.PID) any) ([]metrics.WorkerSummary, map[int32]policy.SessionStats) {
		var workers []metrics.WorkerSummary
		for i, pid := range decPIDs {
			rep, _ := ask(pid).(workerReport)
			workers = append(workers, metrics.WorkerSummary{Name: spec.Decode[i].Name, Kind: "decode", MaxKV: rep.maxUsed, CapKV: rep.cap})
		}
		for i, pid := range prePIDs {
			rep, _ := ask(pid).(workerReport)
			mx := 0
			if rep.series != nil {
				mx = rep.series.Max()
			}
			workers = append(workers, metrics.WorkerSummary{Name: spec.Prefill[i].Name, Kind: "prefill", MaxKV: mx})
		}
		var sessStats map[int32]policy.SessionStats
		if _, ok := b.pol.(sessionPolicy); ok {
			// The router's per-session counters, read in its own goroutine.
			sessStats, _ = ask(rtrPID).(map[int32]policy.SessionStats)
		}
		return workers, sessStats
	}}
}

// spawnPool spawns a fused deployment: the global router and one actor per
// bucket owning its instances.
func spawnPool(spec *topology.Spec, pb *poolBuilt, mk func(string) node, spawn func(*node, handler) *actor.PID, colPID *actor.PID) *spawned {
	g := &globalRouterActor{node: mk("router"), g: pb.global, configs: pb.configs, collector: colPID, pending: map[int64]*gather{}}
	var bas []*bucketActor
	var series []*metrics.Series
	for i, bb := range pb.buckets {
		ba := &bucketActor{node: mk("bucket:" + bb.cfg.Name), id: i, cfg: bb.cfg, local: bb.local, cores: bb.cores,
			global: bb.global, rates: bb.rates, collector: colPID,
			nic: bb.nic, bytesTok: bb.bytesTok, fetches: map[uint64]fetch{}}
		for _, gi := range bb.global {
			s := metrics.NewSeries(spec.Fused[gi].Name, "fused")
			s.Bucket = bb.cfg.Name
			ba.series = append(ba.series, s)
			series = append(series, s)
		}
		bas = append(bas, ba)
	}
	gPID := spawn(&g.node, g)
	for _, ba := range bas {
		g.buckets = append(g.buckets, spawn(&ba.node, ba))
		ba.router = gPID
	}
	return &spawned{router: gPID, series: series, report: func(ask func(*actor.PID) any) ([]metrics.WorkerSummary, map[int32]policy.SessionStats) {
		var workers []metrics.WorkerSummary
		for i, pid := range g.buckets {
			reps, _ := ask(pid).([]workerReport)
			for j, rep := range reps {
				workers = append(workers, metrics.WorkerSummary{Name: spec.Fused[bas[i].global[j]].Name, Kind: "fused",
					Bucket: bas[i].cfg.Name, MaxKV: rep.maxUsed, CapKV: rep.cap})
			}
		}
		return workers, nil
	}}
}

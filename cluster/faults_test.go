package cluster_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/cluster/clustertest"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// faultRun is one in-memory run with the facts the fault tests check.
type faultRun struct {
	net     *clustertest.Net
	recs    []metrics.Record
	faults  []metrics.FaultRecord
	read    int
	csv     []byte
	workers []metrics.WorkerSummary
	// violations: sends towards a node (or over a link) the router had
	// known to be down for longer than the detection delay.
	violations []string
	// overDeadLink counts Transfers sent over a cut link after the
	// router learnt of the cut.
	overDeadLink int
}

// runFaults runs spec in memory and watches every message.
func runFaults(t *testing.T, spec *topology.Spec) *faultRun {
	t.Helper()
	src, err := cluster.Source(spec, false)
	require.NoError(t, err)
	net, err := clustertest.New(spec, src)
	require.NoError(t, err)
	cl := net.Cluster
	fr := &faultRun{net: net}
	// What the router knows: when it learns each target is down and up
	// again (the injector sends every Health at Start, with its delay).
	downD := map[int][]window{}
	downP := map[int][]window{}
	downL := map[[2]int][]window{}
	downB := map[int][]window{} // buckets, as the global router knows them
	bucketIdx := map[cluster.Addr]int{}
	decIdx, preIdx, linkOf := map[cluster.Addr]int{}, map[cluster.Addr]int{}, map[cluster.Addr]bool{}
	nd, np := 0, 0
	for a, k := range cl.Kinds {
		switch k {
		case cluster.KindDecode:
			decIdx[cluster.Addr(a)] = nd
			nd++
		case cluster.KindPrefill:
			preIdx[cluster.Addr(a)] = np
			np++
		case cluster.KindLink:
			linkOf[cluster.Addr(a)] = true
		case cluster.KindBucket:
			bucketIdx[cluster.Addr(a)] = len(bucketIdx)
		}
	}
	net.Tap = func(from cluster.Addr, e cluster.Envelope) {
		now := net.Now()
		if h, ok := e.Msg.(cluster.Health); ok {
			if cl.Kinds[e.To] == cluster.KindGlobal {
				note(downB, h.Index, now+e.Delay, h.Up)
			}
			if cl.Kinds[e.To] == cluster.KindRouter {
				at := now + e.Delay
				switch h.Target {
				case cluster.KindDecode:
					note(downD, h.Index, at, h.Up)
				case cluster.KindPrefill:
					note(downP, h.Index, at, h.Up)
				case cluster.KindLink:
					for _, d := range h.Ds {
						note(downL, [2]int{h.Index, d}, at, h.Up)
					}
				}
			}
			return
		}
		if from < 0 || e.To < 0 {
			return
		}
		switch cl.Kinds[from] {
		case cluster.KindGlobal:
			if _, ok := e.Msg.(cluster.Assign); ok {
				if b := bucketIdx[e.To]; inside(downB[b], now) {
					fr.violations = append(fr.violations, fmt.Sprintf("%v: global router assigned to bucket %d, known down", now, b))
				}
			}
		case cluster.KindRouter:
			switch m := e.Msg.(type) {
			case cluster.Admit, cluster.RunJob:
				if d := decIdx[e.To]; inside(downD[d], now) {
					fr.violations = append(fr.violations, fmt.Sprintf("%v: router sent %T to d%d, known down", now, m, d))
				}
			case cluster.Prefill:
				if p := preIdx[e.To]; inside(downP[p], now) {
					fr.violations = append(fr.violations, fmt.Sprintf("%v: router sent a prefill to p%d, known down", now, p))
				}
				if inside(downD[m.Job.D], now) {
					fr.violations = append(fr.violations, fmt.Sprintf("%v: router sent a prefill for d%d, known down", now, m.Job.D))
				}
			}
		case cluster.KindPrefill:
			if m, ok := e.Msg.(cluster.Transfer); ok {
				p := preIdx[from]
				if inside(downL[[2]int{p, m.Job.D}], now) {
					fr.overDeadLink++
					fr.violations = append(fr.violations, fmt.Sprintf("%v: p%d sent a transfer over its cut link to d%d", now, p, m.Job.D))
				}
				if inside(downD[m.Job.D], now) {
					fr.violations = append(fr.violations, fmt.Sprintf("%v: p%d sent a transfer to d%d, known down", now, p, m.Job.D))
				}
			}
		}
	}
	require.NoError(t, net.Run())
	fr.recs = cl.Collector().Records()
	fr.read = cl.Read()
	fr.faults = cl.Faults()
	metrics.Recover(fr.faults, fr.recs)
	fr.workers = cl.Workers()
	var b bytes.Buffer
	require.NoError(t, metrics.WritePerRequest(&b, fr.recs))
	require.NoError(t, metrics.WriteFaults(&b, fr.faults))
	fr.csv = b.Bytes()
	return fr
}

// window is when the router knows a target is down: from its Health
// (down) until its Health (up); to < 0: never up again.
type window struct{ from, to time.Duration }

func note[K comparable](m map[K][]window, k K, at time.Duration, up bool) {
	if up {
		for i := range m[k] {
			if m[k][i].to < 0 && m[k][i].from <= at {
				m[k][i].to = at
				return
			}
		}
		return
	}
	m[k] = append(m[k], window{from: at, to: -1})
}

// inside: at is strictly after the router learnt the target is down and
// before it learnt it is up (a send in the very step the router learns
// of it may precede the Health).
func inside(ws []window, at time.Duration) bool {
	for _, w := range ws {
		if at > w.from && (w.to < 0 || at < w.to) {
			return true
		}
	}
	return false
}

// TestCutLinkDetected is the case: the p0→d0 link cut from the
// start of the default scenario. After the detection delay nothing more
// goes over the dead link, and with the retry budget no request fails.
func TestCutLinkDetected(t *testing.T) {
	spec := embedded(t, "1p3d-mlx5.hcl")
	for i := range spec.Links {
		if spec.Links[i].From == "p0" && spec.Links[i].To == "d0" {
			spec.Links[i].Faults = []topology.LinkFault{{At: 0, Kind: topology.FaultCut}}
		}
	}
	fr := runFaults(t, spec)
	assert.Empty(t, fr.violations)
	assert.Zero(t, fr.overDeadLink)
	failed := 0
	for _, r := range fr.recs {
		if r.Failed {
			failed++
		}
	}
	assert.Equal(t, fr.read, len(fr.recs), "every request ended")
	assert.Zero(t, failed, "with a retry budget no request fails")
	require.Len(t, fr.faults, 1)
	f := fr.faults[0]
	assert.Equal(t, "cut", f.Kind)
	// The first failed transfer tells the router before the probe does.
	assert.True(t, f.Detected >= 0 && f.Detected <= spec.Recovery.DetectionDelay, "detected at %v", f.Detected)
	t.Logf("cut p0→d0: %d requests, retried %d, failed %d, detected at %v, recovery %v", len(fr.recs), f.Retried, f.Failed, f.Detected, f.Recovery)
}

// TestDecodeCrashReseeds kills a decode worker holding pinned sessions:
// the requests it held are retried, the sessions pinned on it go on
// elsewhere (Reseed), no request fails, and the run recovers.
func TestDecodeCrashReseeds(t *testing.T) {
	const crashAt = 40 * time.Second
	spec := embedded(t, "1p3d-mlx5.hcl")
	spec.Decode[0].Faults = []topology.NodeFault{{Kind: topology.FaultCrash, At: crashAt, For: 30 * time.Second}}
	fr := runFaults(t, spec)
	assert.Empty(t, fr.violations)
	assert.Equal(t, fr.read, len(fr.recs))
	// Sessions whose last request before the crash ran on d0.
	pinned := map[int32]bool{}
	for _, r := range fr.recs {
		if r.Arrival < crashAt && !r.Failed {
			pinned[r.SessionIdx] = r.D == "d0"
		}
	}
	detected := fr.faults[0].Detected
	require.GreaterOrEqual(t, detected, crashAt)
	// Their first request released after the router knew goes elsewhere
	// (faults.csv counts those that had to prefill again: reseeded).
	next := map[int32]metrics.Record{}
	for _, r := range fr.recs {
		if pinned[r.SessionIdx] && r.Arrival > detected && r.Arrival < crashAt+30*time.Second {
			if _, ok := next[r.SessionIdx]; !ok || r.Arrival < next[r.SessionIdx].Arrival {
				next[r.SessionIdx] = r
			}
		}
	}
	n := 0
	for s, p := range pinned {
		if p {
			n++
			if r, ok := next[s]; ok {
				// Direct only where an older copy of its KV still lives.
				assert.NotEqual(t, "d0", r.D, "session %d", s)
			}
		}
	}
	require.NotZero(t, n, "some sessions were pinned on d0")
	require.NotEmpty(t, next)
	f := fr.faults[0]
	for _, r := range fr.recs {
		assert.False(t, r.Failed, "request %d: %s", r.ID, r.Reason)
	}
	assert.NotZero(t, f.Lost+f.LostSessions, "d0 held something when it died")
	assert.NotZero(t, f.Reseeded)
	assert.GreaterOrEqual(t, f.Recovery, time.Duration(0), "the run recovers")
	t.Logf("d0 crash: %d pinned sessions, lost %d requests and %d sessions, retried %d, reseeded %d, detected %v, recovery %v",
		n, f.Lost, f.LostSessions, f.Retried, f.Reseeded, f.Detected-f.At, f.Recovery)
}

// randomFaults draws a fault schedule for spec: crashes (with or without
// restart) and slowdowns of decode and prefill workers, link cuts and
// flaps, all within the first horizon of the run.
func randomFaults(rng *rand.Rand, spec *topology.Spec, horizon time.Duration) {
	at := func() time.Duration { return time.Duration(rng.Int64N(int64(horizon))) }
	dur := func() time.Duration { return time.Duration(1 + rng.Int64N(int64(horizon/2))) }
	for _, ws := range [][]topology.Worker{spec.Decode, spec.Prefill} {
		for i := range ws {
			switch rng.IntN(4) {
			case 0: // healthy
			case 1:
				f := topology.NodeFault{Kind: topology.FaultCrash, At: at()}
				if rng.IntN(4) > 0 {
					f.For = dur()
				}
				ws[i].Faults = append(ws[i].Faults, f)
			case 2:
				ws[i].Faults = append(ws[i].Faults, topology.NodeFault{Kind: topology.FaultSlow, At: at(), For: dur(), Factor: 1 + 4*rng.Float64()})
			case 3:
				t0 := at()
				ws[i].Faults = append(ws[i].Faults, topology.NodeFault{Kind: topology.FaultCrash, At: t0, For: dur()},
					topology.NodeFault{Kind: topology.FaultSlow, At: t0 + horizon, For: dur(), Factor: 2})
			}
		}
	}
	for i := range spec.Links {
		switch rng.IntN(5) {
		case 0:
			t0 := at()
			spec.Links[i].Faults = []topology.LinkFault{{At: t0, Kind: topology.FaultCut}, {At: t0 + dur(), Kind: topology.FaultRestore}}
		case 1:
			spec.Links[i].Faults = []topology.LinkFault{{At: at(), Kind: topology.FaultCut}}
		case 2: // a flap
			t0, p := at(), dur()/4+time.Millisecond
			for k := 0; k < 3; k++ {
				spec.Links[i].Faults = append(spec.Links[i].Faults,
					topology.LinkFault{At: t0 + time.Duration(2*k)*p, Kind: topology.FaultCut},
					topology.LinkFault{At: t0 + time.Duration(2*k+1)*p, Kind: topology.FaultRestore})
			}
		}
	}
}

// TestFaultProperties runs many random fault schedules (every P/D policy,
// two prefill and three decode workers, a short workload) and checks: the
// run ends with every request ended exactly once (the collector fails the
// run on a second end), completed + failed = released, no decode worker
// holds more KV than its pool, no request is sent towards a node (or over
// a link) the router knew to be down, and a second run is byte-identical.
func TestFaultProperties(t *testing.T) {
	seeds := 24
	if testing.Short() {
		seeds = 6
	}
	var tot struct{ runs, faults, requests, lost, retried, failed int }
	for _, pol := range []string{"kvc", "vanilla", "sticky_only", "kv_score"} {
		for seed := range seeds {
			name := fmt.Sprintf("%s/seed%d", pol, seed)
			mk := func() *topology.Spec {
				src, err := scenarios.Read("1p3d-mlx5.hcl")
				require.NoError(t, err)
				spec, err := topology.Parse("<embedded>/1p3d-mlx5.hcl", src, topology.Options{
					Vars: map[string]string{"prefills": "2", "sessions": "4"}, Router: pol})
				require.NoError(t, err, name)
				spec.Workload.Generator.Turns = 6
				spec.Workload.Generator.ThinkTime = time.Second
				spec.Recovery.RetryBudget = seed % 3
				spec.Recovery.DetectionDelay = time.Duration(1+seed%4) * 250 * time.Millisecond
				if seed%2 == 1 {
					// Memory pressure: admissions, evictions and waits for room.
					for i := range spec.Decode {
						spec.Decode[i].KVBudgetTokens = 24000
					}
				}
				randomFaults(rand.New(rand.NewPCG(uint64(seed), 7)), spec, 20*time.Second)
				return spec
			}
			a := runFaults(t, mk())
			assert.Empty(t, a.violations, name)
			failed := 0
			for _, r := range a.recs {
				if r.Failed {
					failed++
				}
			}
			assert.Equal(t, a.read, len(a.recs), "%s: completed + failed = released", name)
			for _, w := range a.workers {
				if w.Kind == "decode" {
					// K_d, not rho*K_d: Fallback and admission-free requests
					// reserve up to the pool on arrival, faults or not
					// (kvc/seed1 without faults peaks at 22043 > 0.95*22800).
					assert.LessOrEqual(t, w.MaxKV, w.CapKV, "%s: %s", name, w.Name)
				}
			}
			b := runFaults(t, mk())
			assert.Equal(t, string(a.csv), string(b.csv), "%s: deterministic", name)
			tot.runs++
			tot.requests += len(a.recs)
			tot.failed += failed
			for _, f := range a.faults {
				tot.faults++
				tot.retried += f.Retried
				tot.lost += f.Lost
			}
		}
	}
	t.Logf("%d runs, %d faults, %d requests: %d lost on crashed nodes, %d retries, %d failed", tot.runs, tot.faults, tot.requests, tot.lost, tot.retried, tot.failed)
}

// randomPoolFaults draws crashes (with or without restart) and slowdowns
// of fused workers and crashes of buckets.
func randomPoolFaults(rng *rand.Rand, spec *topology.Spec, horizon time.Duration) {
	at := func() time.Duration { return time.Duration(rng.Int64N(int64(horizon))) }
	dur := func() time.Duration { return time.Duration(1 + rng.Int64N(int64(horizon/2))) }
	for i := range spec.Fused {
		switch rng.IntN(4) {
		case 1:
			f := topology.NodeFault{Kind: topology.FaultCrash, At: at()}
			if rng.IntN(4) > 0 {
				f.For = dur()
			}
			spec.Fused[i].Faults = []topology.NodeFault{f}
		case 2:
			spec.Fused[i].Faults = []topology.NodeFault{{Kind: topology.FaultSlow, At: at(), For: dur(), Factor: 1 + 4*rng.Float64()}}
		}
	}
	for i := range spec.Buckets {
		if rng.IntN(3) == 0 {
			spec.Buckets[i].Faults = []topology.NodeFault{{Kind: topology.FaultCrash, At: at(), For: dur()}}
		}
	}
}

// poolSpecs are fused deployments with random faults.
func poolSpecs(t *testing.T, seeds int) []*topology.Spec {
	var out []*topology.Spec
	for _, name := range []string{"dp4.hcl", "buckets-3.hcl"} {
		for seed := range seeds {
			src, err := scenarios.Read(name)
			require.NoError(t, err)
			spec, err := topology.Parse("<embedded>/"+name, src, topology.Options{Vars: map[string]string{"sessions": "6"}})
			require.NoError(t, err)
			spec.Workload.Generator.Turns = 6
			spec.Recovery.RetryBudget = seed % 3
			randomPoolFaults(rand.New(rand.NewPCG(uint64(seed), 13)), spec, 20*time.Second)
			out = append(out, spec)
		}
	}
	return out
}

// TestPoolFaultProperties: random crashes and slowdowns of fused workers
// and buckets; every request ends exactly once, a second run is
// byte-identical.
func TestPoolFaultProperties(t *testing.T) {
	seeds := 16
	if testing.Short() {
		seeds = 4
	}
	var lost, retried, failed, n int
	for i, spec := range poolSpecs(t, seeds) {
		a := runFaults(t, spec)
		assert.Empty(t, a.violations)
		assert.Equal(t, a.read, len(a.recs), "spec %d", i)
		for _, w := range a.workers {
			assert.LessOrEqual(t, w.MaxKV, w.CapKV, "spec %d: %s", i, w.Name)
		}
		for _, f := range a.faults {
			lost += f.Lost
			retried += f.Retried
			failed += f.Failed
		}
		n += len(a.faults)
		b := runFaults(t, spec)
		assert.Equal(t, string(a.csv), string(b.csv), "spec %d: deterministic", i)
	}
	assert.NotZero(t, lost, "some fused worker died holding requests")
	t.Logf("%d faults: %d requests lost, %d retries, %d failed", n, lost, retried, failed)
}

// faultWalkSpecs are fault scenarios that reach every fault hop of the
// protocol (TestProtocolWalk).
func faultWalkSpecs(t *testing.T) []*topology.Spec {
	var out []*topology.Spec
	for _, pol := range []string{"kvc", "vanilla", "sticky_only"} {
		for _, np := range []string{"1", "2"} {
			for seed := range 4 {
				src, err := scenarios.Read("1p3d-mlx5.hcl")
				require.NoError(t, err)
				spec, err := topology.Parse("<embedded>/1p3d-mlx5.hcl", src, topology.Options{
					Vars: map[string]string{"prefills": np, "sessions": "6"}, Router: pol})
				require.NoError(t, err)
				spec.Workload.Generator.Turns = 6
				spec.Recovery.RetryBudget = seed % 2
				randomFaults(rand.New(rand.NewPCG(uint64(seed), 11)), spec, 15*time.Second)
				out = append(out, spec)
			}
		}
	}
	return append(out, poolSpecs(t, 6)...)
}

// raceSpec is a 1P1D KVC cluster whose only link is cut while request 0's
// KV is on the wire, at the instant request 1 arrives: the router admits
// request 1 on d0 (a Seed) in the same instant as it learns from request
// 0's failed transfer that d0 is unreachable, so it hands the admitted
// job back to d0 to release its reservation (KVReady router → decode).
func raceSpec(t *testing.T) (*topology.Spec, *source) {
	src, err := scenarios.Read("1p3d-mlx5.hcl")
	require.NoError(t, err)
	spec, err := topology.Parse("<embedded>/1p3d-mlx5.hcl", src, topology.Options{Vars: map[string]string{"decodes": "1"}})
	require.NoError(t, err)
	reqs := func(at time.Duration) *source {
		r0, r1 := req(0, 0, 8000), req(1, 1, 8000)
		r1.Arrival = at
		return &source{reqs: []*workload.Request{r0, r1}}
	}
	// When is request 0's KV on the wire?
	net, err := clustertest.New(spec, reqs(time.Hour))
	require.NoError(t, err)
	var start time.Duration
	net.Tap = func(from cluster.Addr, e cluster.Envelope) {
		if _, ok := e.Msg.(cluster.Transfer); ok && start == 0 {
			start = net.Now()
		}
	}
	require.NoError(t, net.Run())
	require.NotZero(t, start)
	cut := start + time.Millisecond
	spec.Links[0].Faults = []topology.LinkFault{{At: cut, Kind: topology.FaultCut}, {At: cut + time.Second, Kind: topology.FaultRestore}}
	return spec, reqs(cut)
}

// OneDDies is the loss-and-recovery experiment of issue 13: the default
// workload on KVC (1P3D), vanilla P/D (1P3D) and 4-way DP (four fused
// workers), where worker 0 (d0, or w0) dies 40 s into the run and
// restarts with empty memory 30 s later (docs/experiments/one-d-dies).
// It returns one row per policy.
func OneDDies(t *testing.T) []OneDDiesRow {
	var rows []OneDDiesRow
	for _, name := range []string{"kvc", "vanilla", "dp"} {
		spec, err := topology.Load(fmt.Sprintf("../docs/experiments/one-d-dies/%s.hcl", name), topology.Options{})
		require.NoError(t, err)
		fr := runFaults(t, spec)
		require.Len(t, fr.faults, 1)
		f := fr.faults[0]
		row := OneDDiesRow{Policy: spec.Router.Policy, Requests: len(fr.recs), Lost: f.Lost, LostSessions: f.LostSessions,
			Retried: f.Retried, Failed: f.Failed, Reseeded: f.Reseeded, Detect: f.Detected - f.At, Recovery: f.Recovery}
		window := func(lo, hi time.Duration) (ttft time.Duration, direct float64) {
			var n, d int
			var sum time.Duration
			for _, r := range fr.recs {
				if r.Arrival >= lo && r.Arrival < hi && !r.Failed {
					n++
					sum += r.TTFT
					if r.Mode == "Direct" {
						d++
					}
				}
			}
			if n == 0 {
				return -1, 0
			}
			return sum / time.Duration(n), float64(d) / float64(n)
		}
		end := f.End
		row.TTFTBefore, row.DirectBefore = window(f.At-20*time.Second, f.At)
		row.TTFTDown, row.DirectDown = window(f.At, end)
		row.TTFTAfter, row.DirectAfter = window(end, end+20*time.Second)
		rows = append(rows, row)
	}
	return rows
}

// OneDDiesRow is one policy's loss and recovery.
type OneDDiesRow struct {
	Policy                                string
	Requests, Lost, LostSessions          int
	Retried, Failed, Reseeded             int
	Detect, Recovery                      time.Duration
	TTFTBefore, TTFTDown, TTFTAfter       time.Duration // mean TTFT of requests arriving 20 s before, while down, 20 s after the restart
	DirectBefore, DirectDown, DirectAfter float64
}

// TestOneDDies runs the experiment and prints its table (go test
// ./cluster -run TestOneDDies -v). Every policy loses the dead worker's
// work and fails no request within the default retry budget.
func TestOneDDies(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ms := func(d time.Duration) string {
		if d < 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f", float64(d)/1e6)
	}
	t.Log("| policy | requests | lost on the dead worker | sessions lost | retried | failed | reseeded | detected after (ms) | recovery (ms) | mean TTFT before / down / after (ms) | Direct share before / down / after |")
	t.Log("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range OneDDies(t) {
		assert.Zero(t, r.Failed, r.Policy)
		assert.NotZero(t, r.Lost+r.LostSessions, r.Policy)
		t.Logf("| %s | %d | %d | %d | %d | %d | %d | %s | %s | %s / %s / %s | %.2f / %.2f / %.2f |", r.Policy, r.Requests, r.Lost, r.LostSessions,
			r.Retried, r.Failed, r.Reseeded, ms(r.Detect), ms(r.Recovery), ms(r.TTFTBefore), ms(r.TTFTDown), ms(r.TTFTAfter),
			r.DirectBefore, r.DirectDown, r.DirectAfter)
	}
}

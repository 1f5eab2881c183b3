package scenarios_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/transfer"
)

func TestNames(t *testing.T) {
	names := scenarios.Names()
	assert.Equal(t, []string{"16p48d.hcl", "1p3d-mlx5.hcl", "1p3d-tcp.hcl", "4p12d.hcl", "64p192d.hcl", "buckets-3-strict.hcl", "buckets-3.hcl", "chaos.hcl", "claude-code-dp4.hcl", "claude-code-vanilla.hcl", "claude-code.hcl", "dp4.hcl", "kvc-v1-1p3d.hcl", "kvscore-1p3d.hcl", "mooncake.hcl", "reseed-tcp-loopback.hcl", "sticky-1p3d.hcl", "vanilla-pd-1p3d.hcl"}, names)
	assert.Contains(t, names, scenarios.Default)
}

func TestRead(t *testing.T) {
	a, err := scenarios.Read("1p3d-mlx5.hcl")
	require.NoError(t, err)
	b, err := scenarios.Read("1p3d-mlx5")
	require.NoError(t, err)
	assert.Equal(t, a, b)

	_, err = scenarios.Read("nope.hcl")
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
	_, err = scenarios.Read("nope")
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
}

// Every embedded scenario must parse without diagnostics, even with preset
// checking on (the names below are the presets the scenarios use). All are
// 1P3D qwen3-coder-30b-a3b clusters with K_d = 92104 and seed 42; the GPU
// and the workload are per scenario.
func TestEmbeddedScenariosParse(t *testing.T) {
	opts := topology.Options{
		KnownGPU:   func(n string) bool { return n == "H200-SXM" || n == "H100-SXM" },
		KnownModel: func(n string) bool { return n == "qwen3-coder-30b-a3b" },
	}
	type expect struct {
		gpu       string
		generator topology.Generator
	}
	reseedGen := topology.DefaultGenerator()
	reseedGen.Sessions, reseedGen.Turns = 4, 32
	reseedGen.SystemTokens, reseedGen.FirstTokens = 8000, 4000
	reseedGen.AppendTokens, reseedGen.OutputTokens = 1000, 300
	chaosGen := topology.DefaultGenerator()
	chaosGen.Sessions = 8
	expects := map[string]expect{
		"chaos.hcl":               {"H200-SXM", chaosGen},
		"1p3d-mlx5.hcl":           {"H200-SXM", topology.DefaultGenerator()},
		"1p3d-tcp.hcl":            {"H200-SXM", topology.DefaultGenerator()},
		"vanilla-pd-1p3d.hcl":     {"H200-SXM", topology.DefaultGenerator()},
		"reseed-tcp-loopback.hcl": {"H100-SXM", reseedGen},
		"sticky-1p3d.hcl":         {"H200-SXM", topology.DefaultGenerator()},
		"kvscore-1p3d.hcl":        {"H200-SXM", topology.DefaultGenerator()},
		"kvc-v1-1p3d.hcl":         {"H200-SXM", topology.DefaultGenerator()},
	}
	// Trace and fused scenarios are checked by TestTraceScenarios and
	// TestFusedScenarios, the scaled ones by TestScaledScenarios.
	traces := map[string]bool{"claude-code.hcl": true, "claude-code-vanilla.hcl": true, "claude-code-dp4.hcl": true, "mooncake.hcl": true, "dp4.hcl": true, "buckets-3.hcl": true, "buckets-3-strict.hcl": true,
		"4p12d.hcl": true, "16p48d.hcl": true, "64p192d.hcl": true}
	for _, name := range scenarios.Names() {
		if traces[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			want, ok := expects[name]
			require.True(t, ok, "add expectations for the new scenario %s", name)
			spec := testkit.Scenario(t, name, opts)

			assert.Len(t, spec.Prefill, 1)
			assert.Len(t, spec.Decode, 3)
			assert.Empty(t, spec.Fused)
			assert.Len(t, spec.Links, 3)
			for _, w := range append(append([]topology.Worker(nil), spec.Prefill...), spec.Decode...) {
				assert.Equal(t, want.gpu, w.GPU, w.Name)
				assert.Equal(t, "qwen3-coder-30b-a3b", w.Model, w.Name)
			}
			for _, d := range spec.Decode {
				assert.Equal(t, 92104, d.KVBudgetTokens)
			}
			assert.Equal(t, topology.ClockVirtual, spec.Workload.Clock)
			assert.Equal(t, uint64(42), spec.Workload.Seed)
			assert.Empty(t, spec.Workload.Trace)
			assert.Equal(t, want.generator, spec.Workload.Generator)
			_, err := spec.NICs()
			assert.NoError(t, err)
		})
	}
}

func TestDefaultScenario(t *testing.T) {
	spec := testkit.Scenario(t, scenarios.Default, topology.Options{})
	assert.Equal(t, "1p3d-mlx5", spec.Name)
	want := topology.DefaultRouter("kvc")
	want.NetCapacity = true
	assert.Equal(t, want, spec.Router)
	for i, l := range spec.Links {
		assert.Equal(t, topology.TransportRDMA, l.Transport)
		assert.Equal(t, []string{"mlx5_0", "mlx5_1", "mlx5_2"}[i], l.Device)
		assert.Equal(t, 25e9, l.Bandwidth)
		assert.Equal(t, 10*time.Microsecond, l.Latency)
	}
}

func TestTCPScenario(t *testing.T) {
	spec := testkit.Scenario(t, "1p3d-tcp.hcl", topology.Options{})
	want := topology.DefaultRouter("kvc")
	want.NetCapacity = true
	assert.Equal(t, want, spec.Router)
	for _, l := range spec.Links {
		assert.Equal(t, topology.TransportTCP, l.Transport)
		assert.Equal(t, 25e9/8, l.Bandwidth)
		assert.Equal(t, 50*time.Microsecond, l.Latency)
	}
}

func TestVanillaScenario(t *testing.T) {
	spec := testkit.Scenario(t, "vanilla-pd-1p3d.hcl", topology.Options{})
	assert.Equal(t, topology.DefaultRouter("vanilla"), spec.Router)

	// Same cluster and workload as the default scenario.
	def := testkit.Scenario(t, scenarios.Default, topology.Options{})
	assert.Equal(t, def.Prefill, spec.Prefill)
	assert.Equal(t, def.Decode, spec.Decode)
	assert.Equal(t, def.Links, spec.Links)
	assert.Equal(t, def.Workload, spec.Workload)
}

func TestScenarioVarsOverride(t *testing.T) {
	spec := testkit.Scenario(t, scenarios.Default, topology.Options{
		Vars: map[string]string{"sessions": "52", "seed": "7"},
	})
	assert.Equal(t, 52, spec.Workload.Generator.Sessions)
	assert.Equal(t, uint64(7), spec.Workload.Seed)
}

func TestReseedTCPLoopbackScenario(t *testing.T) {
	spec := testkit.Scenario(t, "reseed-tcp-loopback.hcl", topology.Options{})
	assert.Equal(t, "reseed-tcp-loopback", spec.Name)
	want := topology.DefaultRouter("kvc")
	want.NetCapacity = true // like every KVC scenario (docs/MODEL.md §7.7)
	assert.Equal(t, want, spec.Router, "the paper's router parameters are the defaults")

	p := spec.Prefill[0]
	assert.Equal(t, 0.835, p.MemFractionStatic)
	assert.Zero(t, p.KVBudgetTokens, "p0's prefix cache is derived from memory")
	assert.Equal(t, topology.PerfOverrides{MFU: ptr(0.57), ReservedMemory: ptr(1.44 * (1 << 30))}, p.Perf)
	for _, d := range spec.Decode {
		assert.True(t, d.Perf.IsZero(), "decode workers use the default cost model")
	}
	for _, l := range spec.Links {
		assert.Equal(t, topology.TransportTCP, l.Transport)
		assert.Equal(t, "lo", l.Device)
		assert.Equal(t, 25e9, l.Bandwidth)
		assert.Equal(t, 1.5e9, l.MaxRate)
		assert.Equal(t, 50*time.Microsecond, l.Latency)
		assert.Zero(t, l.Efficiency)
		assert.Nil(t, l.Setup)
		assert.Empty(t, l.Faults)
	}
	nics, err := spec.NICs()
	require.NoError(t, err)
	require.Len(t, nics, 1, "the three links share one loopback NIC")
	assert.Equal(t, []int{0, 1, 2}, nics[0].Links)

	// The variables reach the overrides.
	spec = testkit.Scenario(t, "reseed-tcp-loopback.hcl", topology.Options{
		Vars: map[string]string{"prefill_mfu": "0.35", "path_rate": "2GB/s", "sessions": "8"},
	})
	assert.Equal(t, ptr(0.35), spec.Prefill[0].Perf.MFU)
	assert.Equal(t, 2e9, spec.Links[2].MaxRate)
	assert.Equal(t, 8, spec.Workload.Generator.Sessions)
}

// TestReseedTCPLoopbackCosts checks the figures quoted in the comments of
// reseed-tcp-loopback.hcl against the cost models pdemu builds from it.
func TestReseedTCPLoopbackCosts(t *testing.T) {
	spec := testkit.Scenario(t, "reseed-tcp-loopback.hcl", topology.Options{})
	perf, err := actors.PerfFor(spec.Prefill[0])
	require.NoError(t, err)
	assert.Equal(t, 0.57, perf.MFU)
	assert.Equal(t, gpu.DefaultMBU, perf.MBU, "absent overrides keep the defaults")
	assert.Equal(t, gpu.DefaultPrefillOverhead, perf.PrefillOverhead)
	assert.Equal(t, 98_304, int(perf.KVBytesPerToken()))
	assert.Equal(t, 92_107, perf.PoolTokens(spec.Prefill[0].MemFractionStatic), "p0's prefix cache")

	cfgs, err := actors.NICConfigs(spec)
	require.NoError(t, err)
	require.Len(t, cfgs, 1)
	assert.Equal(t, "p0/lo", cfgs[0].Name)
	assert.Equal(t, 1.5e9, cfgs[0].EffectiveRate(), "max_rate binds, not 0.33 x 200 Gb/s")

	def := perf
	def.MFU = gpu.DefaultMFU
	sec := func(d time.Duration) float64 { return d.Seconds() }
	for _, c := range []struct {
		tokens                  int
		prefill, transfer, dflt float64 // seconds, as quoted in the scenario
	}{
		{40_000, 1.505, 2.62, 2.45},
		{50_000, 2.23, 3.28, 3.63},
		{60_000, 3.09, 3.93, 5.04},
	} {
		pre := sec(perf.PrefillTime(c.tokens, 0))
		xfer := sec(transfer.Estimate(cfgs[0], int64(c.tokens)*perf.KVBytesPerToken()))
		t.Logf("reseed %d tokens: re-prefill %.3f s (default MFU %.3f s), transfer %.3f s, total %.2f s",
			c.tokens, pre, sec(def.PrefillTime(c.tokens, 0)), xfer, pre+xfer)
		assert.InDelta(t, c.prefill, pre, 0.006, "re-prefill of %d tokens", c.tokens)
		assert.InDelta(t, c.transfer, xfer, 0.006, "transfer of %d tokens", c.tokens)
		assert.InDelta(t, c.dflt, sec(def.PrefillTime(c.tokens, 0)), 0.006, "default-MFU prefill of %d tokens", c.tokens)
		// The paper's ranges (60K tokens re-prefill slightly above 3 s).
		assert.True(t, pre >= 1.5 && pre <= 3.1, "re-prefill %v", pre)
		assert.True(t, xfer >= 1.5 && xfer <= 4, "transfer %v", xfer)
		assert.True(t, pre+xfer >= 3 && pre+xfer <= 7.1, "reseed %v", pre+xfer)
	}

	// "about 78 % of the prefill FLOPs are causal attention (50K tokens:
	// 9.8e14 of 1.26e15)": the pass without attention pairs is the rest.
	var full gpu.Pass
	full.AddPrefill(50_000, 0)
	noAttn := full
	noAttn.PrefillPairs = 0
	total, attn := perf.Estimate(full).FLOPs, perf.Estimate(full).FLOPs-perf.Estimate(noAttn).FLOPs
	assert.InDelta(t, 1.26e15, total, 0.005e15)
	assert.InDelta(t, 9.8e14, attn, 0.05e14)
	assert.InDelta(t, 0.78, attn/total, 0.005)

	// "Equivalent: efficiency = 0.06 without max_rate."
	eff := spec.Links[0]
	eff.MaxRate, eff.Efficiency = 0, 0.06
	alt := *spec
	alt.Links = []topology.Link{eff, eff, eff}
	alt.Links[1].To, alt.Links[2].To = "d1", "d2"
	altCfgs, err := actors.NICConfigs(&alt)
	require.NoError(t, err)
	assert.InDelta(t, 1.5e9, altCfgs[0].EffectiveRate(), 1)
}

func TestReseedTCPLoopbackRuns(t *testing.T) {
	spec := testkit.Scenario(t, "reseed-tcp-loopback.hcl", topology.Options{})
	res, err := actors.Run(context.Background(), spec, actors.Options{})
	require.NoError(t, err)
	s := res.Summary
	assert.Equal(t, 4*32, s.Requests.Total)
	assert.Zero(t, s.Requests.Failed)
	assert.Positive(t, s.Modes["Reseed"], "the scenario is about reseeds")
}

// Link faults reach the NIC: a cut from t=0 fails every transfer (every
// session's first turn needs one), with the link actor's "link: " reason,
// and the run still accounts for every request.
func TestLinkCutEndToEnd(t *testing.T) {
	spec := testkit.Scenario(t, "reseed-tcp-loopback.hcl", topology.Options{})
	spec.Workload.Generator.Turns = 4
	// On one link only: it is one NIC, so all three links are cut. No
	// retries: the first failed transfer tells the router that no decode
	// worker is reachable, and later requests fail for that.
	spec.Links[1].Faults = []topology.LinkFault{{At: 0, Kind: topology.FaultCut}}
	spec.Recovery.RetryBudget = 0
	res, err := actors.Run(context.Background(), spec, actors.Options{})
	require.NoError(t, err)
	s := res.Summary
	assert.Equal(t, s.Requests.Total, s.Requests.Completed+s.Requests.Failed)
	assert.GreaterOrEqual(t, s.Requests.Failed, spec.Workload.Generator.Sessions)
	for _, r := range res.Records {
		// The waits name the fault that keeps every decode worker
		// unreachable (a permanent cut: they fail at once).
		if r.Failed && r.Reason != "fault: no healthy decode worker (link p0/lo cut); no fault that ends" {
			assert.Equal(t, `link: transfer: NIC "p0/lo" cut`, r.Reason, "request %d", r.ID)
		}
		if r.Turn == 0 {
			assert.True(t, r.Failed, "turn 0 of %s needs a transfer", r.Session)
		}
	}
}

// A degraded NIC slows transfers: the first turn of the first session (a
// Seed, alone on the link) waits for its transfer at half the rate.
func TestLinkDegradeEndToEnd(t *testing.T) {
	ttft0 := func(faults []topology.LinkFault) time.Duration {
		spec := testkit.Scenario(t, "reseed-tcp-loopback.hcl", topology.Options{})
		spec.Workload.Generator.Turns = 2
		spec.Links[0].Faults = faults
		res, err := actors.Run(context.Background(), spec, actors.Options{})
		require.NoError(t, err)
		require.Equal(t, int64(0), res.Records[0].ID)
		require.False(t, res.Records[0].Failed)
		return res.Records[0].TTFT
	}
	base := ttft0(nil)
	slow := ttft0([]topology.LinkFault{{At: 0, Kind: topology.FaultDegrade, Factor: 0.5}})
	restored := ttft0([]topology.LinkFault{{At: 0, Kind: topology.FaultDegrade, Factor: 0.5}, {At: 0, Kind: topology.FaultRestore}})
	t.Logf("first-turn TTFT: %v healthy, %v at half rate", base, slow)
	assert.Greater(t, slow-base, 500*time.Millisecond, "12K+ tokens (1.2 GB) at 0.75 instead of 1.5 GB/s")
	assert.Equal(t, base, restored)
}

// Cost-model overrides are validated with the model and GPU when the
// cluster is built; the error names the worker.
func TestPerfOverrideErrorsNameTheWorker(t *testing.T) {
	for name, mut := range map[string]func(*topology.Spec){
		"reserved_memory": func(s *topology.Spec) { s.Prefill[0].Perf.ReservedMemory = ptr(100.0 * (1 << 30)) },
		"mfu":             func(s *topology.Spec) { s.Decode[2].Perf.MFU = ptr(0.0) },
		"step_overhead":   func(s *topology.Spec) { s.Decode[1].Perf.StepOverhead = ptr(-time.Millisecond) },
	} {
		spec := testkit.Scenario(t, "reseed-tcp-loopback.hcl", topology.Options{})
		mut(spec)
		_, err := actors.Run(context.Background(), spec, actors.Options{})
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), name)
			assert.Regexp(t, `^worker (p0|d1|d2): `, err.Error())
		}
	}
	// reserved_memory is parsed without knowing the GPU: 100 GiB passes
	// the parser and fails when p0 is built.
	src, err := scenarios.Read("reseed-tcp-loopback.hcl")
	require.NoError(t, err)
	src = []byte(strings.Replace(string(src), `reserved_memory     = "1.44GiB"`, `reserved_memory     = "100GiB"`, 1))
	spec, err := topology.Parse("<embedded>/reseed-tcp-loopback.hcl", src, topology.Options{})
	require.NoError(t, err)
	_, err = actors.PerfFor(spec.Prefill[0])
	assert.ErrorContains(t, err, "worker p0: gpu: invalid perf for qwen3-coder-30b-a3b on 1xH100-SXM: reserved_memory")
}

func ptr[T any](v T) *T { return &v }

// TestTraceScenarios: the trace scenarios name a shipped trace relative to
// the scenarios directory (../../shared/traces from scenarios/), with the
// format spelled out, and replay it with the real presets.
func TestTraceScenarios(t *testing.T) {
	cases := map[string]struct {
		trace, format, loop string
		prefill, decode     int
	}{
		"claude-code.hcl":         {"weka-claude-code", "claude-code", topology.LoopClosed, 1, 3},
		"claude-code-vanilla.hcl": {"weka-claude-code", "claude-code", topology.LoopClosed, 1, 3},
		"claude-code-dp4.hcl":     {"weka-claude-code", "claude-code", topology.LoopClosed, 0, 0},
		"mooncake.hcl":            {"mooncake/synthetic_trace.jsonl", "mooncake", topology.LoopOpen, 4, 4},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			spec := testkit.Scenario(t, name, topology.Options{BaseDir: "/repo/scenarios"})
			assert.Equal(t, "/shared/traces/"+want.trace, spec.Workload.Trace)
			assert.Equal(t, want.format, spec.Workload.Format)
			assert.Equal(t, want.loop, spec.Workload.Loop)
			assert.Len(t, spec.Prefill, want.prefill)
			assert.Len(t, spec.Decode, want.decode)
			if spec.Router.Policy == "kvc" {
				assert.True(t, spec.Router.NetCapacity)
			}
			if strings.HasPrefix(name, "claude-code") {
				// Sized for the sessions (up to 496K tokens): K_d from
				// memory and the 1M-token YaRN context on every worker.
				for _, w := range append(append(spec.Prefill, spec.Decode...), spec.Fused...) {
					assert.Zero(t, w.KVBudgetTokens, "%s: %s", name, w.Name)
					assert.Equal(t, 1<<20, w.MaxModelLen, "%s: %s", name, w.Name)
				}
				assert.Equal(t, 16, spec.Workload.Replay.MaxConcurrent, name)
			}
			_, err := spec.NICs()
			assert.NoError(t, err)
		})
	}
}

func TestBaselineScenarioRouters(t *testing.T) {
	for name, want := range map[string]string{
		"sticky-1p3d.hcl": "sticky_only", "kvscore-1p3d.hcl": "kv_score", "kvc-v1-1p3d.hcl": "kvc", "vanilla-pd-1p3d.hcl": "vanilla",
	} {
		spec := testkit.Scenario(t, name, topology.Options{})
		assert.Equal(t, want, spec.Router.Policy, name)
		if name == "kvc-v1-1p3d.hcl" {
			assert.True(t, spec.Router.V1)
		}
	}
}

// TestFusedScenarios: dp4 is one pool of four fused workers behind
// cache_aware_dp; buckets-3 and buckets-3-strict tile every length over
// three buckets and differ only in their global policy.
func TestFusedScenarios(t *testing.T) {
	spec := testkit.Scenario(t, "dp4.hcl", topology.Options{})
	assert.Len(t, spec.Fused, 4)
	require.Len(t, spec.Buckets, 1)
	assert.Equal(t, "cache_aware_dp", spec.LocalRouter.Policy)
	assert.Equal(t, "cache_aware_dp", spec.Router.Policy)

	for file, g := range map[string]string{"buckets-3-strict.hcl": "strict_input_length", "buckets-3.hcl": "bucket_score"} {
		spec := testkit.Scenario(t, file, topology.Options{})
		require.Len(t, spec.Buckets, 3)
		assert.Equal(t, g, spec.GlobalRouter.Policy)
		assert.Equal(t, "cache_affinity", spec.LocalRouter.Policy)
		assert.Equal(t, 0, spec.Buckets[0].Min)
		for i := 1; i < 3; i++ {
			assert.Equal(t, spec.Buckets[i-1].Max+1, spec.Buckets[i].Min)
		}
	}
}

// The shared bases under base/ are embedded but are not scenarios.
func TestBasesAreNotScenarios(t *testing.T) {
	assert.NotContains(t, scenarios.Names(), "base")
	_, err := fs.ReadFile(scenarios.FS, "base/pd.hcl")
	require.NoError(t, err)
	_, err = topology.Parse("<embedded>/base/pd.hcl", mustRead(t, "base/pd.hcl"), topology.Options{})
	assert.ErrorContains(t, err, "Missing router block", "a base alone is not runnable")
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := fs.ReadFile(scenarios.FS, name)
	require.NoError(t, err)
	return b
}

// embeddedFiles lists every embedded .hcl file, bases included.
func embeddedFiles(t *testing.T) []string {
	var files []string
	require.NoError(t, fs.WalkDir(scenarios.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".hcl") {
			files = append(files, p)
		}
		return err
	}))
	return files
}

// No block is copied between two shipped files: no run of six or more
// identical lines of code (comments and blank lines left out) appears in
// two files, and the files stay at most half the 1,539 lines they had
// before extends and dynamic blocks.
func TestScenariosHaveNoCopies(t *testing.T) {
	const run = 6
	code := map[string][]string{}
	total := 0
	for _, f := range embeddedFiles(t) {
		src := string(mustRead(t, f))
		total += strings.Count(src, "\n")
		for _, line := range strings.Split(src, "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") {
				code[f] = append(code[f], line)
			}
		}
	}
	assert.LessOrEqual(t, total, 1539/2, "shipped scenario lines")
	seen := map[string]string{}
	for _, f := range embeddedFiles(t) {
		lines := code[f]
		for i := 0; i+run <= len(lines); i++ {
			key := strings.Join(lines[i:i+run], "\n")
			if prev, ok := seen[key]; ok && prev != f {
				t.Errorf("%s and %s share %d lines:\n%s", prev, f, run, key)
			}
			seen[key] = f
		}
	}
}

// A zero the scenario writes reaches the generator as a zero: before,
// session_stagger = "0s" became 1 s and system_tokens = 0 became 4,000.
func TestGeneratorZerosAreHonoured(t *testing.T) {
	src := string(mustRead(t, "1p3d-mlx5.hcl"))
	src = strings.Replace(src, `session_stagger = "1s"`, `session_stagger = "0s"`, 1)
	src = strings.Replace(src, `system_tokens   = 4000`, `system_tokens   = 0`, 1)
	spec, err := topology.Parse("<embedded>/zeros.hcl", []byte(src), topology.Options{})
	require.NoError(t, err)
	require.Zero(t, spec.Workload.Generator.SessionStagger)
	require.Zero(t, spec.Workload.Generator.SystemTokens)
	s, err := actors.Source(spec, false)
	require.NoError(t, err)
	firsts := map[int32][]uint64{}
	for {
		r, err := s.Next()
		if err != nil {
			break
		}
		if r.Turn == 0 {
			assert.Zero(t, r.Arrival, "session %d starts at once", r.Session)
			firsts[r.Session] = r.Blocks
		}
	}
	require.Len(t, firsts, spec.Workload.Generator.Sessions)
	assert.NotEqual(t, firsts[0][0], firsts[1][0], "no shared system prefix")
}

// The chaos scenario: d1's hand-written crash and the chaos block's draws
// are in the Spec, and the run ends every request.
func TestChaosScenario(t *testing.T) {
	spec := testkit.Scenario(t, "chaos.hcl", topology.Options{})
	require.NotNil(t, spec.Chaos)
	assert.Contains(t, spec.Decode[1].Faults, topology.NodeFault{Kind: topology.FaultCrash, At: 30 * time.Second, For: 20 * time.Second})
	res, err := actors.Run(context.Background(), spec, actors.Options{})
	require.NoError(t, err)
	s := res.Summary
	assert.Equal(t, s.Requests.Total, s.Requests.Completed+s.Requests.Failed)
	require.NotNil(t, s.Faults)
	assert.Equal(t, len(res.Faults), s.Faults.Events)
	assert.GreaterOrEqual(t, s.Faults.Events, 2)
}

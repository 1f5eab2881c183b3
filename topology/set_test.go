package topology

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
)

func parseEmbedded(name string, opts Options) (*Spec, error) {
	src, err := scenarios.Read(name)
	if err != nil {
		return nil, err
	}
	return Parse(EmbeddedPrefix+name, src, opts)
}

func TestSet(t *testing.T) {
	cases := []struct {
		name     string
		scenario string
		set      []string
		check    func(t *testing.T, s *Spec)
	}{
		{"router parameter", "1p3d-mlx5.hcl", []string{"router.tau_append=4096"},
			func(t *testing.T, s *Spec) { assert.Equal(t, 4096, s.Router.TauAppend) }},
		{"router parameter absent from the file", "1p3d-tcp.hcl", []string{"router.tau_reject=7"},
			func(t *testing.T, s *Spec) { assert.Equal(t, 7, s.Router.TauReject) }},
		{"one worker", "1p3d-mlx5.hcl", []string{"decode.d1.kv_budget_tokens=60000"},
			func(t *testing.T, s *Spec) {
				assert.Equal(t, 92104, s.Decode[0].KVBudgetTokens)
				assert.Equal(t, 60000, s.Decode[1].KVBudgetTokens)
			}},
		{"every worker of a kind", "1p3d-mlx5.hcl", []string{"decode.*.gpu=H100-SXM"},
			func(t *testing.T, s *Spec) {
				for _, d := range s.Decode {
					assert.Equal(t, "H100-SXM", d.GPU)
				}
				assert.Equal(t, "H200-SXM", s.Prefill[0].GPU)
			}},
		{"workload", "1p3d-mlx5.hcl", []string{"workload.loop=open", "workload.seed=7"},
			func(t *testing.T, s *Spec) {
				assert.Equal(t, LoopOpen, s.Workload.Loop)
				assert.Equal(t, uint64(7), s.Workload.Seed)
			}},
		{"generator", "1p3d-mlx5.hcl", []string{"workload.generator.agentic.think_time=1.5s"},
			func(t *testing.T, s *Spec) { assert.Equal(t, 1500*time.Millisecond, s.Workload.Generator.ThinkTime) }},
		{"a singleton's label may be left out", "1p3d-mlx5.hcl", []string{"workload.generator.sessions=8", "router.kvc.epsilon=3"},
			func(t *testing.T, s *Spec) {
				assert.Equal(t, 8, s.Workload.Generator.Sessions, "over sessions = var.sessions")
				assert.Equal(t, 3, s.Router.Epsilon)
			}},
		{"a trace option", "claude-code.hcl", []string{"workload.max_concurrent=4", "workload.share_prefix=false"},
			func(t *testing.T, s *Spec) {
				assert.Equal(t, 4, s.Workload.Replay.MaxConcurrent)
				assert.False(t, s.Workload.Replay.SharePrefix)
			}},
		{"durations and sizes as in the file", "1p3d-tcp.hcl", []string{"mesh.latency=20us", "mesh.bandwidth=100Gbps", "prefill.p0.reserved_memory=2GiB"},
			func(t *testing.T, s *Spec) {
				assert.Equal(t, 20*time.Microsecond, s.Links[0].Latency)
				assert.Equal(t, 12.5e9, s.Links[2].Bandwidth)
				assert.Equal(t, float64(2<<30), *s.Prefill[0].Perf.ReservedMemory)
			}},
		{"top-level attribute", "dp4.hcl", []string{"name=other"},
			func(t *testing.T, s *Spec) { assert.Equal(t, "other", s.Name) }},
		{"an expression value", "buckets-3.hcl", []string{`bucket.short.instances=["s0", "s1"]`, "bucket.medium.instances=[\"m0\",\"m1\",\"m2\",\"m3\",\"s2\"]"},
			func(t *testing.T, s *Spec) { assert.Equal(t, []string{"s0", "s1"}, s.Buckets[0].Instances) }},
		{"the last --set wins", "1p3d-mlx5.hcl", []string{"router.rho=0.5", "router.rho=0.8"},
			func(t *testing.T, s *Spec) { assert.Equal(t, 0.8, s.Router.Rho) }},
		{"a local policy parameter", "dp4.hcl", []string{"router.cache_threshold=0.25"},
			func(t *testing.T, s *Spec) { assert.Equal(t, 0.25, s.LocalRouter.CacheThreshold) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := parseEmbedded(tc.scenario, Options{Set: tc.set})
			require.NoError(t, err)
			require.NoError(t, checkInvariants(spec))
			tc.check(t, spec)
		})
	}
}

func TestSetErrors(t *testing.T) {
	cases := []struct {
		name    string
		set     []string
		phrases []string
	}{
		{"unknown path", []string{"router.tau_apend=4096"},
			[]string{"--set router.tau_apend=4096:1:1:", "Unknown --set path", `Did you mean "router.tau_append"?`}},
		{"unknown worker", []string{"decode.d7.kv_budget_tokens=1"},
			[]string{"Unknown --set path", `Did you mean "decode.d0.kv_budget_tokens"?`}},
		{"a link path on a mesh", []string{"link.*.*.latency=20us"},
			[]string{"Unknown --set path", "links come from its mesh block: --set mesh.latency=... sets it on every link"}},
		{"not a parameter of this policy", []string{"router.cache_threshold=0.5"},
			[]string{"Unknown --set path"}},
		{"bad value: the file's error, naming the argument", []string{"router.rho=2"},
			[]string{"--set router.rho=2:1:12:", `Invalid value for "rho"`, "must be in (0, 1]"}},
		{"bad duration", []string{"workload.sample_interval=fast"},
			[]string{"--set workload.sample_interval=fast:1:", `Invalid duration for "sample_interval"`}},
		{"bad enum", []string{"workload.loop=opne"},
			[]string{`Did you mean "open"?`}},
		{"wrong type", []string{"router.v1=maybe"},
			[]string{"--set router.v1=maybe:1:11:", "a bool is required"}},
		{"no =", []string{"router.rho"}, []string{"Invalid --set", "PATH=VALUE"}},
		{"empty path segment", []string{"router..rho=1"}, []string{"Invalid --set"}},
		{"variables in an expression", []string{"bucket.short.instances=[var.x]"}, []string{"cannot refer to variables"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseEmbedded("1p3d-mlx5.hcl", Options{Set: tc.set})
			require.Error(t, err)
			var de *DiagError
			require.True(t, errors.As(err, &de), "%T %v", err, err)
			for _, p := range tc.phrases {
				assert.Contains(t, flat(err.Error()), flat(p))
			}
		})
	}
}

func TestRouterSwap(t *testing.T) {
	cases := []struct {
		scenario, router string
		check            func(t *testing.T, s *Spec)
	}{
		{"1p3d-mlx5.hcl", "vanilla", func(t *testing.T, s *Spec) {
			assert.Equal(t, DefaultRouter("vanilla"), s.Router)
			require.NotNil(t, s.RouterSwap)
			assert.Equal(t, "kvc", s.RouterSwap.From)
			assert.False(t, s.RouterSwap.Kept)
			assert.Contains(t, s.RouterSwap.Dropped, "net_capacity", "the settings a swap drops are listed")
			assert.Contains(t, s.RouterSwap.String(), "dropped: alpha, block_tokens, epsilon, net_capacity")
		}},
		// The scenario's own policy: its settings stay (it used to reset
		// them to the defaults: 37 % Direct instead of 65 %).
		{"1p3d-mlx5.hcl", "kvc", func(t *testing.T, s *Spec) {
			own, err := parseEmbedded("1p3d-mlx5.hcl", Options{})
			require.NoError(t, err)
			assert.Equal(t, own.Router, s.Router, "the file's net_capacity, epsilon, ...")
			assert.True(t, s.Router.NetCapacity)
			require.NotNil(t, s.RouterSwap)
			assert.True(t, s.RouterSwap.Kept)
		}},
		{"vanilla-pd-1p3d.hcl", "kv_score", func(t *testing.T, s *Spec) { assert.Equal(t, "kv_score", s.Router.Policy) }},
		{"dp4.hcl", "least_loaded", func(t *testing.T, s *Spec) {
			assert.Equal(t, "least_loaded", s.LocalRouter.Policy)
			assert.Equal(t, DefaultLocalRouter("least_loaded"), s.LocalRouter)
		}},
		{"buckets-3.hcl", "strict_input_length", func(t *testing.T, s *Spec) {
			assert.Equal(t, DefaultGlobalRouter("strict_input_length"), s.GlobalRouter)
			assert.Equal(t, "cache_affinity", s.LocalRouter.Policy)
		}},
		{"buckets-3.hcl", "least_loaded", func(t *testing.T, s *Spec) {
			assert.Equal(t, "least_loaded", s.LocalRouter.Policy)
			assert.Equal(t, "bucket_score", s.GlobalRouter.Policy)
		}},
		{"buckets-3.hcl", "kvc", func(t *testing.T, s *Spec) { assert.Equal(t, "kvc", s.LocalRouter.Policy) }},
	}
	for _, tc := range cases {
		t.Run(tc.scenario+"/"+tc.router, func(t *testing.T) {
			spec, err := parseEmbedded(tc.scenario, Options{Router: tc.router})
			require.NoError(t, err)
			require.NoError(t, checkInvariants(spec))
			tc.check(t, spec)
		})
	}

	// --set applies to the swapped-in policy.
	spec, err := parseEmbedded("1p3d-mlx5.hcl", Options{Router: "kv_score", Set: []string{"router.alpha=3"}})
	require.NoError(t, err)
	assert.Equal(t, 3.0, spec.Router.Alpha)
}

func TestRouterSwapErrors(t *testing.T) {
	cases := []struct {
		scenario, router string
		phrases          []string
	}{
		{"dp4.hcl", "kvc", []string{"--router kvc:1:1:", "Policy cannot run on this cluster", "routes to prefill and decode workers, but this cluster has only fused workers", `"cache_aware_dp"`}},
		{"1p3d-mlx5.hcl", "cache_aware_dp", []string{"Policy cannot run on this cluster", "has prefill and decode workers", `"kvc"`, `"vanilla"`}},
		{"1p3d-mlx5.hcl", "vanila", []string{"Unknown router policy", `Did you mean "vanilla"?`}},
		{"1p3d-mlx5.hcl", "bucket_score", []string{"Cannot swap the routing policy"}},
	}
	for _, tc := range cases {
		t.Run(tc.scenario+"/"+tc.router, func(t *testing.T) {
			_, err := parseEmbedded(tc.scenario, Options{Router: tc.router})
			require.Error(t, err)
			for _, p := range tc.phrases {
				assert.Contains(t, flat(err.Error()), flat(p))
			}
		})
	}
}

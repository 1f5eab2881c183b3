package topology

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/policy/bucket"
)

// fusedBlocks declares fused workers, one block each.
func fusedBlocks(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "\nfused %q {\n  gpu   = \"H200-SXM\"\n  model = \"qwen3-coder-30b-a3b\"\n}\n", n)
	}
	return b.String()
}

// bucketed is the design document's three-bucket scenario.
var bucketed = fusedBlocks("s0", "s1", "s2", "m0", "m1", "m2", "m3", "l0", "l1", "l2") + `
bucket "short" {
  input_tokens = [0, 32768]
  instances    = ["s0", "s1", "s2"]
}
bucket "medium" {
  input_tokens = [32769, 81920]
  instances    = ["m0", "m1", "m2", "m3"]
}
bucket "long" {
  input_tokens = [81921, 131072]
  instances    = ["l0", "l1", "l2"]
}
global_router "bucket_score" {
  length_penalty_weight = 1
  load_weight           = 1
  cache_weight          = 1
}
local_router "cache_affinity" {
  meta_store_ttl = "1000s"
  probe_latency  = "10us"
  probe_topk     = 4
  load_alpha     = 0.1
  score_alpha    = 1
  score_beta     = 0.1
  prefix_k       = 8
  fan_out        = 0
}
`

// bucketA and bucketB are two buckets: f0 serves [0, 99], f1 [100, 199].
const (
	bucketA = `
bucket "a" {
  input_tokens = [0, 99]
  instances    = ["f0"]
}`
	bucketB = `
bucket "b" {
  input_tokens = [100, 199]
  instances    = ["f1"]
}`
)

// twoBuckets is a small valid bucket scenario: bucketA then bucketB.
var twoBuckets = fusedBlocks("f0", "f1") + bucketA + bucketB + `
local_router "least_loaded" {}
`

func TestBucketScenario(t *testing.T) {
	spec := mustParse(t, bucketed, testOpts)
	assert.Equal(t, []Bucket{
		{Name: "short", Min: 0, Max: 32768, Instances: []string{"s0", "s1", "s2"}},
		{Name: "medium", Min: 32769, Max: 81920, Instances: []string{"m0", "m1", "m2", "m3"}},
		{Name: "long", Min: 81921, Max: 131072, Instances: []string{"l0", "l1", "l2"}},
	}, spec.Buckets)
	assert.Equal(t, GlobalRouter{Policy: "bucket_score", LengthPenaltyWeight: 1, LoadWeight: 1, CacheWeight: 1}, spec.GlobalRouter)
	assert.Equal(t, LocalRouter{
		Policy: "cache_affinity", MetaStoreTTL: 1000 * time.Second, ProbeLatency: 10 * time.Microsecond, ProbeTopK: 4,
		LoadAlpha: 0.1, ScoreAlpha: 1, ScoreBeta: 0.1, PrefixK: 8, FanOut: 0, Alpha: 1, OverloadFactor: 2,
		CacheThreshold: 0.3, BalanceAbs: 64, BalanceRel: 1.5, MissRule: "smallest_tree",
	}, spec.LocalRouter)
	assert.Equal(t, PolicyBuckets, spec.Router.Policy)
	assert.Len(t, spec.Fused, 10)
	assert.Empty(t, spec.Prefill)
	assert.Empty(t, spec.Decode)
}

func TestBucketDefaults(t *testing.T) {
	spec := mustParse(t, twoBuckets, testOpts)
	assert.Equal(t, DefaultGlobalRouter(GlobalStrictInputLength), spec.GlobalRouter, "global_router defaults to strict_input_length")
	assert.Equal(t, DefaultLocalRouter("least_loaded"), spec.LocalRouter)
	assert.Equal(t, DefaultRouter(PolicyBuckets), spec.Router)

	// Every local policy takes every parameter, and the buckets may come in
	// any order (ids follow the file).
	src := fusedBlocks("f0", "f1") + bucketB + bucketA + `
global_router "strict_input_length" {}
local_router "kvc" {
  alpha           = 2
  meta_store_ttl  = "0s"
  probe_latency   = "1ms"
  probe_topk      = 0
  load_alpha      = 0
  score_alpha     = 3
  score_beta      = 0.5
  prefix_k        = 1
  fan_out         = 2
  overload_factor = 1.5
}
`
	spec = mustParse(t, src, testOpts)
	assert.Equal(t, []string{"b", "a"}, []string{spec.Buckets[0].Name, spec.Buckets[1].Name})
	assert.Equal(t, LocalRouter{Policy: "kvc", Alpha: 2, MetaStoreTTL: 0, ProbeLatency: time.Millisecond, ProbeTopK: 0,
		LoadAlpha: 0, ScoreAlpha: 3, ScoreBeta: 0.5, PrefixK: 1, FanOut: 2, OverloadFactor: 1.5,
		CacheThreshold: 0.3, BalanceAbs: 64, BalanceRel: 1.5, MissRule: "smallest_tree"}, spec.LocalRouter)
	assert.Equal(t, DefaultGlobalRouter(GlobalStrictInputLength), spec.GlobalRouter)

	// Variables work in lists.
	src = "variable \"split\" { default = 4096 }\n" + strings.NewReplacer(
		"[0, 99]", "[0, var.split]", "[100, 199]", "[var.split + 1, 2 * var.split]").Replace(twoBuckets)
	spec = mustParse(t, src, Options{Vars: map[string]string{"split": "100"}})
	assert.Equal(t, 100, spec.Buckets[0].Max)
	assert.Equal(t, 200, spec.Buckets[1].Max)
}

// TestSinglePoolLocalPolicy: router "<local policy>" over fused workers is
// one implicit bucket under strict_input_length.
func TestSinglePoolLocalPolicy(t *testing.T) {
	src := fusedBlocks("w0", "w1", "w2") + `
router "precise" {
  probe_latency = "20us"
  probe_topk    = 2
}
`
	spec := mustParse(t, src, testOpts)
	assert.Equal(t, "precise", spec.Router.Policy)
	assert.Equal(t, []Bucket{{Name: ImplicitBucket, Min: 0, Max: math.MaxInt, Instances: []string{"w0", "w1", "w2"}}}, spec.Buckets)
	assert.Equal(t, DefaultGlobalRouter(GlobalStrictInputLength), spec.GlobalRouter)
	want := DefaultLocalRouter("precise")
	want.ProbeLatency, want.ProbeTopK = 20*time.Microsecond, 2
	assert.Equal(t, want, spec.LocalRouter)

	for _, p := range LocalPolicies() {
		if p == "kvc" {
			continue // router "kvc" is the disaggregated KVC-Router
		}
		spec := mustParse(t, fusedBlocks("w0")+fmt.Sprintf("router %q {}\n", p), testOpts)
		assert.Equal(t, DefaultLocalRouter(p), spec.LocalRouter, p)
		assert.Len(t, spec.Buckets, 1, p)
	}

	// Disaggregated policies have no buckets.
	assert.Empty(t, mustParse(t, minimal, testOpts).Buckets)
}

// TestBucketPolicyNamesMatch: the HCL layer accepts exactly the policies
// policy/bucket implements.
func TestBucketPolicyNamesMatch(t *testing.T) {
	assert.Equal(t, bucket.LocalPolicies(), LocalPolicies())
	assert.Equal(t, bucket.GlobalPolicies(), GlobalPolicies())
	assert.Equal(t, bucket.DefaultPrefixK, DefaultPrefixK)
	assert.Equal(t, bucket.DefaultOverloadFactor, DefaultOverloadFactor)
	for _, p := range policies {
		if p.local {
			assert.NotNil(t, lookupLocal(p.name), p.name)
			assert.Equal(t, []Kind{KindFused}, p.kinds, p.name)
		}
	}
	// Every parsed LocalRouter and GlobalRouter builds.
	for _, src := range []string{bucketed, twoBuckets} {
		spec := mustParse(t, src, testOpts)
		var cfgs []bucket.BucketConfig
		for _, b := range spec.Buckets {
			cfgs = append(cfgs, bucket.BucketConfig{Name: b.Name, Range: bucket.Range{Min: b.Min, Max: b.Max}, Instances: len(b.Instances)})
		}
		g := spec.GlobalRouter
		_, err := bucket.NewGlobal(bucket.GlobalConfig{Policy: g.Policy, LengthPenaltyWeight: g.LengthPenaltyWeight, LoadWeight: g.LoadWeight, CacheWeight: g.CacheWeight}, cfgs)
		require.NoError(t, err)
		for _, p := range LocalPolicies() {
			l := DefaultLocalRouter(p)
			_, err := bucket.NewLocal(bucket.LocalConfig{Policy: l.Policy, MetaStoreTTL: l.MetaStoreTTL, ProbeLatency: l.ProbeLatency,
				ProbeTopK: l.ProbeTopK, LoadAlpha: l.LoadAlpha, ScoreAlpha: l.ScoreAlpha, ScoreBeta: l.ScoreBeta,
				PrefixK: l.PrefixK, FanOut: l.FanOut, OverloadFactor: l.OverloadFactor, KVC: bucket.KVCConfig{Alpha: l.Alpha}}, 3)
			require.NoError(t, err, p)
		}
	}
}

// TestBucketDiagnostics has one case per bucket diagnostic, in the style
// of TestDiagnostics: the "#!" line is the one reported.
func TestBucketDiagnostics(t *testing.T) {
	in := func(src, old, new string) string { return replace(src, old, new) }
	cases := []struct {
		name    string
		src     string
		phrases []string
	}{
		// Form.
		{"router and buckets", twoBuckets + "router \"least_loaded\" {} #!\n", []string{"Conflicting routing blocks", "cannot also have a router block", "test.hcl:"}},
		{"prefill worker with buckets", twoBuckets + replace(p0, `prefill "p0" {`, `prefill "p0" { #!`), []string{"Worker not used by bucket routing", `prefill worker "p0"`}},
		{"decode worker with buckets", twoBuckets + replace(d0, `decode "d0" {`, `decode "d0" { #!`), []string{"Worker not used by bucket routing", `decode worker "d0"`}},
		{"no buckets", fusedBlocks("f0") + "local_router \"random\" {} #!\n", []string{"No buckets", "at least one bucket block"}},
		{"duplicate local router", twoBuckets + "local_router \"random\" {} #!\n", []string{"Duplicate local_router block"}},
		{"duplicate global router", twoBuckets + "global_router \"bucket_score\" {}\nglobal_router \"strict_input_length\" {} #!\n", []string{"Duplicate global_router block"}},

		// Policies and parameters.
		{"unknown local policy", in(twoBuckets, `local_router "least_loaded" {}`, `local_router "least_load" {} #!`), []string{"Unknown local router policy", `Did you mean "least_loaded"?`, `"cache_affinity", "cache_aware_dp", "cache_load"`}},
		{"global policy as local", in(twoBuckets, `local_router "least_loaded" {}`, `local_router "bucket_score" {} #!`), []string{"Unknown local router policy", `"bucket_score" is a global_router policy`}},
		{"unknown global policy", twoBuckets + "global_router \"strict\" {} #!\n", []string{"Unknown global router policy", `"bucket_score" and "strict_input_length"`}},
		{"misspelt global policy", twoBuckets + "global_router \"bucket_scor\" {} #!\n", []string{"Unknown global router policy", `Did you mean "bucket_score"?`}},
		{"local policy as global", twoBuckets + "global_router \"precise\" {} #!\n", []string{"Unknown global router policy", `"precise" is a local_router policy`}},
		{"global policy as router", fusedBlocks("f0") + "router \"bucket_score\" {} #!\n", []string{"Unknown router policy", `"bucket_score" is a global_router policy`}},
		{"misspelt local parameter", in(twoBuckets, `local_router "least_loaded" {}`, "local_router \"least_loaded\" {\n  probe_topc = 2 #!\n}"), []string{"Unsupported argument", `Did you mean "probe_topk"?`}},
		{"misspelt global parameter", twoBuckets + "global_router \"bucket_score\" {\n  load_wieght = 2 #!\n}\n", []string{"Unsupported argument", `Did you mean "load_weight"?`}},
		{"strict takes no weights", twoBuckets + "global_router \"strict_input_length\" {\n  load_weight = 2 #!\n}\n", []string{"Unsupported argument", `"load_weight" is not expected here`}},
		{"negative weight", twoBuckets + "global_router \"bucket_score\" {\n  cache_weight = -1 #!\n}\n", []string{`Invalid value for "cache_weight"`, "at least 0"}},
		{"bad ttl", in(twoBuckets, `local_router "least_loaded" {}`, "local_router \"ttl_aware\" {\n  meta_store_ttl = \"1000\" #!\n}"), []string{`Invalid duration for "meta_store_ttl"`}},
		{"negative probe latency", in(twoBuckets, `local_router "least_loaded" {}`, "local_router \"precise\" {\n  probe_latency = \"-1us\" #!\n}"), []string{`Invalid duration for "probe_latency"`, "negative"}},
		{"negative probe_topk", in(twoBuckets, `local_router "least_loaded" {}`, "local_router \"precise\" {\n  probe_topk = -1 #!\n}"), []string{`Invalid value for "probe_topk"`, "at least 0"}},
		{"prefix_k zero", in(twoBuckets, `local_router "least_loaded" {}`, "local_router \"prefix_affinity\" {\n  prefix_k = 0 #!\n}"), []string{`Invalid value for "prefix_k"`, "at least 1"}},
		{"fractional fan_out", in(twoBuckets, `local_router "least_loaded" {}`, "local_router \"prefix_affinity\" {\n  fan_out = 1.5 #!\n}"), []string{"Unsuitable value type", "whole number"}},
		{"overload factor below 1", in(twoBuckets, `local_router "least_loaded" {}`, "local_router \"cache_affinity\" {\n  overload_factor = 0.5 #!\n}"), []string{`Invalid value for "overload_factor"`, "at least 1"}},
		{"negative score_beta", in(twoBuckets, `local_router "least_loaded" {}`, "local_router \"cache_score\" {\n  score_beta = -0.1 #!\n}"), []string{`Invalid value for "score_beta"`}},
		{"single-pool parameter check", fusedBlocks("f0") + "router \"cache_load\" {\n  load_alpha = -1 #!\n}\n", []string{`Invalid value for "load_alpha"`}},
		{"single-pool misspelt parameter", fusedBlocks("f0") + "router \"cache_load\" {\n  load_alpa = 1 #!\n}\n", []string{"Unsupported argument", `Did you mean "load_alpha"?`}},
		{"single-pool kvc parameters", fusedBlocks("f0") + "router \"least_loaded\" {\n  tau_reject = 1 #!\n}\n", []string{"Unsupported argument"}},
		{"kvc over fused workers", fusedBlocks("f0") + "router \"kvc\" {} #!\n", []string{"No prefill workers", `local_router "kvc"`}},
		{"single-pool rejects prefill", fusedBlocks("f0") + replace(p0, `prefill "p0" {`, `prefill "p0" { #!`) + "router \"least_loaded\" {}\n", []string{"Worker not used by the router policy", `routes to fused workers only`}},
		{"single-pool needs fused", p0 + d0 + l00 + "router \"round_robin\" {} #!\n", []string{"No fused workers", `"round_robin" policy`}},
		{"vanilla rejects fused", minimal + replace(fusedBlocks("f0"), `fused "f0" {`, `fused "f0" { #!`), []string{"Worker not used by the router policy", `fused worker "f0"`}},

		// Buckets.
		{"missing input_tokens", in(twoBuckets, "bucket \"a\" {\n  input_tokens = [0, 99]\n", "bucket \"a\" { #!\n"), []string{"Missing required argument", `"input_tokens" is required`, "inclusive range"}},
		{"missing instances", in(in(twoBuckets, "  instances    = [\"f0\"]\n", ""), `bucket "a" {`, `bucket "a" { #!`), []string{"Missing required argument", `"instances" is required`, "fused workers of the bucket"}},
		{"input_tokens not a list", in(twoBuckets, "[0, 99]", "99 #!"), []string{"Unsuitable value type"}},
		{"input_tokens of strings", in(twoBuckets, "[0, 99]", "[\"a\", 99] #!"), []string{"Unsuitable value type", "a number is required"}},
		{"input_tokens with three numbers", in(twoBuckets, "[0, 99]", "[0, 50, 99] #!"), []string{"Invalid input_tokens", "[MIN, MAX]", "Got 3 numbers"}},
		{"negative min", in(twoBuckets, "[0, 99]", "[-1, 99] #!"), []string{"Invalid input_tokens", "MIN must be at least 0; got -1"}},
		{"min above max", in(twoBuckets, "[100, 199]", "[199, 100] #!"), []string{"Invalid input_tokens", "MAX must be at least MIN (199); got 100"}},
		{"overlap", in(twoBuckets, "[100, 199]", "[99, 199] #!"), []string{"Overlapping buckets", `Bucket "b" [99, 199] overlaps bucket "a" [0, 99] (declared at test.hcl:`, "input lengths 99 to 99"}},
		{"gap", in(twoBuckets, "[100, 199]", "[150, 199] #!"), []string{"Gap between buckets", "No bucket covers input lengths 100 to 149", `start "b" at 100, or end "a" at 149`}},
		{"gap at a bucket declared first", in(twoBuckets, "[0, 99]", "[300, 400] #!"), []string{"Gap between buckets", "No bucket covers input lengths 200 to 299"}},
		{"duplicate bucket name", in(twoBuckets, `bucket "b" {`, `bucket "a" { #!`), []string{"Duplicate bucket name", `A bucket named "a" was already declared at test.hcl:`}},
		{"invalid bucket name", in(twoBuckets, `bucket "b" {`, `bucket "b b" { #!`), []string{"Invalid bucket name"}},
		{"empty bucket", in(twoBuckets, "instances    = [\"f1\"]", "instances = [] #!"), []string{"Empty bucket", `Bucket "b" has no instances`}},
		{"unknown instance", in(twoBuckets, "instances    = [\"f1\"]", "instances = [\"f2\"] #!"), []string{"Unknown worker", `Bucket "b" lists "f2"`, `Did you mean "f0"?`}},
		{"instance is not fused", fusedBlocks("f0") + p0 + "bucket \"a\" {\n  input_tokens = [0, 9]\n  instances = [\"f0\",\n  \"p0\"] #!\n}\nlocal_router \"random\" {}\n", []string{"Invalid bucket instance", `prefill worker "p0"`}},
		{"duplicate instance", in(twoBuckets, "instances    = [\"f1\"]", "instances = [\"f1\",\n  \"f1\"] #!"), []string{"Duplicate bucket instance", `lists "f1" twice`}},
		{"worker in two buckets", in(twoBuckets, "instances    = [\"f1\"]", "instances = [\"f1\",\n  \"f0\"] #!"), []string{"Worker in two buckets", `"f0" is already an instance of bucket "a" (at test.hcl:`}},
		{"worker in no bucket", twoBuckets + replace(fusedBlocks("f2"), `fused "f2" {`, `fused "f2" { #!`), []string{"Worker in no bucket", `Fused worker "f2" is an instance of no bucket`}},
		{"null input_tokens", in(twoBuckets, "[0, 99]", "null #!"), []string{`Invalid value for "input_tokens"`, "not null"}},
		{"null instances", in(twoBuckets, "instances    = [\"f1\"]", "instances = null #!"), []string{`Invalid value for "instances"`, "not null"}},
		{"null instance", in(twoBuckets, "instances    = [\"f1\"]", "instances = [\"f1\", null] #!"), []string{"Unsuitable value type", "null value is not allowed"}},
		{"huge max", in(twoBuckets, "[100, 199]", "[100, 1e300] #!"), []string{"Unsuitable value type", "whole number"}},
		{"range from a variable", "variable \"r\" { default = [5, 0] }\n" + in(twoBuckets, "[0, 99]", "var.r #!"), []string{"Invalid input_tokens", "MAX must be at least MIN (5); got 0"}},
		{"undeclared variable in instances", in(twoBuckets, "instances    = [\"f1\"]", "instances = [var.w] #!"), []string{"Undeclared variable", `no variable block named "w"`}},
		{"instances not a list of strings", in(twoBuckets, "instances    = [\"f1\"]", "instances = [[\"f1\"]] #!"), []string{"Unsuitable value type"}},
		{"unknown bucket attribute", in(twoBuckets, "input_tokens = [100, 199]", "input_token = [100, 199] #!"), []string{"Unsupported argument", `Did you mean "input_tokens"?`}},
		{"misspelt block", in(twoBuckets, `bucket "b" {`, `buckets "b" { #!`), []string{"Unsupported block type", `Did you mean "bucket"?`}},
	}
	for _, tc := range cases {
		if len(tc.phrases) == 0 {
			continue // see TestBucketDiagnosticsAtBlocks
		}
		t.Run(tc.name, func(t *testing.T) {
			checkMarkedDiag(t, tc.src, testOpts, tc.phrases)
		})
	}
}

func TestBucketsNeverPanicOnOddInputs(t *testing.T) {
	for _, src := range []string{
		"bucket {}", `bucket "a" "b" {}`, `bucket "a" {}`, `global_router {}`, `local_router "x" "y" {}`,
		`bucket "a" { input_tokens = [] }`, `bucket "a" { instances = [] }`,
		`global_router "bucket_score" { load_weight = null }`, `local_router "precise" { probe_latency = null }`,
		`local_router "precise" { probe_latency = 5 }`, `local_router "precise" { meta_store_ttl = ["1s"] }`,
		twoBuckets + `bucket "c" { input_tokens = [200, 300] instances = ["f0"] }`,
		replace(twoBuckets, "[0, 99]", "[0, 9223372036854775807]"),
		replace(twoBuckets, "[0, 99]", "[-9223372036854775808, 0]"),
		replace(twoBuckets, "[0, 99]", "[0, var]"),
		replace(twoBuckets, `["f0"]`, `[for x in ["f0"] : x]`),
		replace(twoBuckets, `["f0"]`, `["f0", "f0", "f0"]`),
		fusedBlocks("f0") + `router "least_loaded" { prefix_k = 0 }` + "\n" + `local_router "random" {}`,
	} {
		assert.NotPanics(t, func() { _, _ = Parse("odd.hcl", []byte(src), testOpts) }, "%q", src)
		spec, err := parse(newParser(), "odd.hcl", []byte(src), testOpts)
		if err == nil {
			assert.NoError(t, checkInvariants(spec), "%q", src)
		}
	}
}

// TestBucketDiagnosticsAtBlocks: diagnostics about a missing piece point
// at the first bucket block.
func TestBucketDiagnosticsAtBlocks(t *testing.T) {
	src := replace(twoBuckets, `local_router "least_loaded" {}`, "")
	msg := parseErr(t, src, testOpts)
	line := strings.Count(src[:strings.Index(src, `bucket "a"`)], "\n") + 1
	assert.Contains(t, msg, "test.hcl:"+strconv.Itoa(line)+":")
	assert.Contains(t, flat(msg), "Missing local_router block")
	assert.Contains(t, flat(msg), `"cache_affinity", "cache_aware_dp", "cache_load"`)

	src = replace(twoBuckets, "  instances    = [\"f0\"]\n", "")
	msg = parseErr(t, src, testOpts)
	assert.Contains(t, flat(msg), `"instances" is required`)
	assert.NotContains(t, msg, "Worker in no bucket", "one diagnostic per mistake")
}

// A misspelt instance explains the worker left out: no second diagnostic.
func TestUnknownInstanceDoesNotCascade(t *testing.T) {
	msg := parseErr(t, replace(twoBuckets, `instances    = ["f1"]`, `instances    = ["f9"]`), testOpts)
	assert.Contains(t, msg, "Unknown worker")
	assert.NotContains(t, msg, "Worker in no bucket")
	assert.NotContains(t, msg, "Empty bucket")
}

func TestBucketsCollectAllErrors(t *testing.T) {
	src := fusedBlocks("f0", "f1", "f2") + `
bucket "a" {
  input_tokens = [0, 99]
  instances    = ["f0", "f1"]
}
bucket "b" {
  input_tokens = [50, 199]
  instances    = ["f1"]
}
global_router "bucket_score" {
  load_weight = -1
}
local_router "least_loaded" {
  fan_out = -2
}
`
	assert.Equal(t, []string{
		"Worker in no bucket",
		"Overlapping buckets",
		"Worker in two buckets",
		`Invalid value for "load_weight"`,
		`Invalid value for "fan_out"`,
	}, diagSummaries(t, src, testOpts), "all errors, in file order")
}

func TestBucketRemoteFetchBandwidth(t *testing.T) {
	src := "fused \"w0\" {\n  gpu = \"H200-SXM\"\n  model = \"m\"\n}\nbucket \"all\" {\n  input_tokens = [0, 100]\n  instances = [\"w0\"]\n  remote_fetch_bandwidth = \"200Gbps\"\n}\nlocal_router \"least_loaded\" {}\n"
	spec, err := Parse("test.hcl", []byte(src), Options{})
	require.NoError(t, err)
	assert.Equal(t, 25e9, spec.Buckets[0].RemoteFetchBandwidth)

	_, err = Parse("test.hcl", []byte(strings.Replace(src, `"200Gbps"`, `"fast"`, 1)), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "test.hcl:8")
	assert.Contains(t, err.Error(), `Invalid bandwidth for "remote_fetch_bandwidth"`)
}

func TestFusedDRAMTier(t *testing.T) {
	src := "fused \"w0\" {\n  gpu = \"H200-SXM\"\n  model = \"m\"\n  dram_cache_tokens = 2000000\n  dram_bandwidth = \"50GB/s\"\n}\nrouter \"least_loaded\" {}\n"
	spec, err := Parse("test.hcl", []byte(src), Options{})
	require.NoError(t, err)
	assert.Equal(t, 2000000, spec.Fused[0].DRAMCacheTokens)
	assert.Equal(t, 50e9, spec.Fused[0].DRAMBandwidth)

	_, err = Parse("test.hcl", []byte(strings.Replace(src, `"50GB/s"`, `"quick"`, 1)), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "test.hcl:5")
	assert.Contains(t, err.Error(), `Invalid bandwidth for "dram_bandwidth"`)
	_, err = Parse("test.hcl", []byte(strings.Replace(src, "2000000", "-1", 1)), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "test.hcl:4")
}

package topology

import (
	"time"
)

// DefaultLocalRouter returns a LocalRouter for policy with every parameter
// at its default.
func DefaultLocalRouter(policy string) LocalRouter {
	return LocalRouter{
		Policy:         policy,
		MetaStoreTTL:   DefaultMetaStoreTTL,
		ProbeLatency:   DefaultProbeLatency,
		ProbeTopK:      DefaultProbeTopK,
		LoadAlpha:      DefaultLoadAlpha,
		ScoreAlpha:     DefaultScoreAlpha,
		ScoreBeta:      DefaultScoreBeta,
		PrefixK:        DefaultPrefixK,
		FanOut:         DefaultFanOut,
		Alpha:          DefaultAlpha,
		OverloadFactor: DefaultOverloadFactor,
		CacheThreshold: DefaultCacheThreshold,
		BalanceAbs:     DefaultBalanceAbs,
		BalanceRel:     DefaultBalanceRel,
		MissRule:       MissSmallestTree,
	}
}

// DefaultGlobalRouter returns a GlobalRouter for policy with every weight
// at its default (weights are kept, and ignored, under strict_input_length).
func DefaultGlobalRouter(policy string) GlobalRouter {
	return GlobalRouter{
		Policy:              policy,
		LengthPenaltyWeight: DefaultLengthPenaltyWeight,
		LoadWeight:          DefaultLoadWeight,
		CacheWeight:         DefaultCacheWeight,
	}
}

// localPolicy is a bucket local policy: its name and a one-line summary.
// The formulas live in policy/bucket (doc.go).
type localPolicy struct{ name, doc string }

// localPolicies are the local_router block labels; they must match
// bucket.LocalPolicies() (a test checks).
var localPolicies = []localPolicy{
	{"random", "a seeded uniform choice"},
	{"round_robin", "instances in turn"},
	{"least_loaded", "the fewest queued + running requests"},
	{"least_tokens", "the fewest KV tokens in use + queued prefill tokens"},
	{"cache_score", "score_alpha·predicted prefix − score_beta·load"},
	{"ttl_aware", "the longest predicted prefix among meta-store entries younger than meta_store_ttl"},
	{"precise", "probe the meta-store's top probe_topk instances (probe_latency each), longest real prefix"},
	{"cache_load", "predicted prefix fraction − load_alpha·load"},
	{"estimated_ttft", "the shortest (queued prefill + uncached tokens) / prefill rate"},
	{"prefix_affinity", "rendezvous hash of the first prefix_k blocks, spread over fan_out"},
	{"cache_affinity", "prefix_affinity's home unless the meta-store shows a longer prefix elsewhere or the home is overloaded"},
	{"kvc", "KVC Algorithm 1 scoring (overlap + alpha·sticky, sticky, −inflight, −assigned), no admission"},
	{"cache_aware_dp", "SGLang-style cache-aware DP: longest recorded prefix when its ratio is above cache_threshold, else the smallest tree (miss_rule); least loaded when imbalanced"},
}

// LocalPolicies returns the local_router policy names, sorted.
func LocalPolicies() []string { return rowNames(localPolicies) }

func lookupLocal(name string) *localPolicy { return findRow(localPolicies, name) }

// localParams are the parameters of every local policy (local_router
// block, and router block with a local policy).
var localParams = []routerParam{
	durationField("meta_store_ttl", "how long a meta-store entry lives after its last record; \"0s\" = forever", 0,
		func(o *routerOut) *time.Duration { return &o.Local.MetaStoreTTL }),
	durationField("probe_latency", "the cost of one probe of an instance's cache (precise)", 0,
		func(o *routerOut) *time.Duration { return &o.Local.ProbeLatency }),
	numField("probe_topk", "the instances precise probes; 0 probes every instance",
		func(o *routerOut) *int { return &o.Local.ProbeTopK }, atLeast(0)),
	numField("load_alpha", "the weight of the load in cache_load",
		func(o *routerOut) *float64 { return &o.Local.LoadAlpha }, atLeast(0.0)),
	numField("score_alpha", "the weight of the predicted prefix in cache_score",
		func(o *routerOut) *float64 { return &o.Local.ScoreAlpha }, atLeast(0.0)),
	numField("score_beta", "the weight of the load in cache_score",
		func(o *routerOut) *float64 { return &o.Local.ScoreBeta }, atLeast(0.0)),
	numField("prefix_k", "the leading blocks hashed to find a request's home instance",
		func(o *routerOut) *int { return &o.Local.PrefixK }, atLeast(1)),
	numField("fan_out", "the top rendezvous instances a prefix is spread over by load; 0 or 1 = home only",
		func(o *routerOut) *int { return &o.Local.FanOut }, atLeast(0)),
	numField("alpha", "the sticky bonus α of kvc",
		func(o *routerOut) *float64 { return &o.Local.Alpha }, atLeast(0.0)),
	numField("overload_factor", "cache_affinity leaves an instance whose load is above overload_factor × max(mean load, 1)",
		func(o *routerOut) *float64 { return &o.Local.OverloadFactor }, atLeast(1.0)),
	numField("cache_threshold", "cache_aware_dp follows the cache when the matched fraction of the prompt reaches it",
		func(o *routerOut) *float64 { return &o.Local.CacheThreshold }, unitIntervalClosed),
	numField("balance_abs_threshold", "cache_aware_dp balances load when max−min load exceeds it (and the relative threshold)",
		func(o *routerOut) *int { return &o.Local.BalanceAbs }, atLeast(0)),
	numField("balance_rel_threshold", "cache_aware_dp balances load when max load exceeds it × min load (and the absolute threshold)",
		func(o *routerOut) *float64 { return &o.Local.BalanceRel }, atLeast(1.0)),
	paramMissRule, paramInclusiveMatch, // topology/kvcpaper.go
}

// singlePoolPolicies are the router table entries of the local policies
// over one pool of fused workers. A name a disaggregated policy declares
// it shares (sharesLocal: kvc) is left out; any other name that is both
// stays twice in the table, which TestPolicyNamesOnce rejects, so a new
// P/D policy cannot silently take over a fused one.
func singlePoolPolicies() []policy {
	var out []policy
	for _, lp := range localPolicies {
		if sharedWithDisaggregated(lp.name) {
			continue
		}
		out = append(out, policy{
			name:   lp.name,
			doc:    lp.doc + ", over one pool of fused workers",
			kinds:  []Kind{KindFused},
			params: localParams,
			local:  true,
		})
	}
	return out
}

func sharedWithDisaggregated(name string) bool {
	for _, p := range disaggregatedPolicies {
		if p.name == name && p.sharesLocal != "" {
			return true
		}
	}
	return false
}

// globalPolicy is a global_router policy and the parameters it takes.
type globalPolicy struct {
	name, doc string
	params    []routerParam
}

var globalPolicies = []globalPolicy{
	{GlobalStrictInputLength, "only the bucket whose input_tokens range contains the input length", nil},
	{GlobalBucketScore, "the lowest length_penalty_weight·length_penalty + load_weight·load + cache_weight·miss", []routerParam{
		numField("length_penalty_weight", "the weight of the distance of the input length outside a bucket's range",
			func(o *routerOut) *float64 { return &o.Global.LengthPenaltyWeight }, atLeast(0.0)),
		numField("load_weight", "the weight of a bucket's load",
			func(o *routerOut) *float64 { return &o.Global.LoadWeight }, atLeast(0.0)),
		numField("cache_weight", "the weight of a bucket's predicted cache miss",
			func(o *routerOut) *float64 { return &o.Global.CacheWeight }, atLeast(0.0)),
	}},
}

// GlobalPolicies returns the global_router policy names, sorted.
func GlobalPolicies() []string { return rowNames(globalPolicies) }

func lookupGlobal(name string) *globalPolicy { return findRow(globalPolicies, name) }

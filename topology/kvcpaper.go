package topology

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
)

// Options added for issue 10 (the KVC paper's evaluation): the
// cache_aware_dp miss rule and comparison, and the ε default. They live in
// this file so that the router and bucket tables need one line each.

// DP miss rules (LocalRouter.MissRule), as written in HCL.
const (
	MissSmallestTree = "smallest_tree" // SGLang: a miss goes to the worker with the smallest tree
	MissLeastLoaded  = "least_loaded"  // pdemu before issue 10: a miss goes to the least loaded worker
)

// paramMissRule is cache_aware_dp's miss_rule.
var paramMissRule = routerParam{
	name: "miss_rule",
	help: `cache_aware_dp's choice when the match is below cache_threshold: "smallest_tree" (SGLang) or "least_loaded"`,
	apply: func(c *checker, attr *hcl.Attribute, ctx *hcl.EvalContext, o *routerOut) {
		var v string
		if !c.decoded(gohcl.DecodeExpression(attr.Expr, ctx, &v)) {
			return
		}
		switch v {
		case MissSmallestTree, MissLeastLoaded:
			o.Local.MissRule = v
		default:
			c.errorf(attr.Expr.Range(), "Invalid miss_rule",
				"miss_rule must be %q or %q, got %q.%s", MissSmallestTree, MissLeastLoaded, v,
				didYouMean(v, []string{MissSmallestTree, MissLeastLoaded}))
		}
	},
}

// paramInclusiveMatch is cache_aware_dp's inclusive_match.
var paramInclusiveMatch = routerParam{
	name: "inclusive_match",
	help: "cache_aware_dp follows the cache when the match ratio equals cache_threshold too (SGLang: strictly above)",
	apply: func(c *checker, attr *hcl.Attribute, ctx *hcl.EvalContext, o *routerOut) {
		var v bool
		if c.decoded(gohcl.DecodeExpression(attr.Expr, ctx, &v)) {
			o.Local.InclusiveMatch = v
		}
	},
}

// defaultEpsilon gives ε its general default, |D| (spec §2.4 and §6), when
// a kvc router block does not set epsilon. The paper's 1P3D evaluation
// (§7) uses 2: its scenarios say so explicitly.
func defaultEpsilon(rh *routerHCL, spec *Spec) {
	if pol := lookupPolicy(spec.Router.Policy); pol == nil || !pol.epsilonIsD || len(spec.Decode) == 0 || rh == nil || rh.Body == nil {
		return
	}
	attrs, _ := rh.Body.JustAttributes()
	if _, set := attrs["epsilon"]; !set {
		spec.Router.Epsilon = len(spec.Decode)
	}
}

// kvc parameters of issue 10 (both false by default, the spec's reading).
var (
	paramResidentAppend = boolParam("resident_append",
		"measure append_len against what the decode worker last admitted of the session instead of the spec's new-since-the-previous-turn tokens",
		func(r *Router) *bool { return &r.ResidentAppend })
	paramDPSync = boolParam("dp_sync",
		"stream each Direct turn's new KV back to the session's backup on P over the link (D→P incremental sync, spec §9 Q4)",
		func(r *Router) *bool { return &r.DPSync })
	paramPrefillCacheBackup = boolParam("prefill_cache_backup",
		"let the prefill worker's prefix cache (refreshed by Fallbacks) serve reseeds instead of the seed-time snapshot backup",
		func(r *Router) *bool { return &r.PrefillCacheBackup })
)

// Generator kinds (generator block labels).
var generatorKinds = []string{"agentic", "swebench", "burst"}

// generatorKind checks a generator block's label.
func (c *checker) generatorKind(gh *generatorHCL) {
	for _, k := range generatorKinds {
		if gh.Kind == k {
			return
		}
	}
	c.errorf(gh.KindRange, "Unknown generator",
		"There is no generator named %q.%s The generators are %s.", gh.Kind, didYouMean(gh.Kind, generatorKinds), quotedList(generatorKinds))
}

// The SWE-Bench trace's shape (spec §7), generator "swebench"'s defaults.
const (
	SWEBenchSessions = 52
	SWEBenchRequests = 4449
)

// swebenchContents mirrors workload.SWEBenchContents (topology does not
// import workload).
var swebenchContents = []string{"paper", "v0", "v1-stress"}

// kvcGenerator fills and checks the swebench and burst generators' fields:
// attributes of another generator are errors, not silently ignored.
func (c *checker) kvcGenerator(gh *generatorHCL, g *Generator) {
	if gh.Kind == "agentic" {
		for _, a := range []struct {
			set  bool
			rng  hcl.Range
			name string
		}{{gh.Content != nil, gh.ContentRange, "content"}, {gh.Requests != nil, gh.RequestsRange, "requests"},
			{gh.ActiveSessions != nil, gh.ActiveSessionsRange, "active_sessions"}} {
			if a.set {
				c.errorf(a.rng, "Not an agentic generator attribute", "%q is an attribute of generator \"swebench\", not of \"agentic\".", a.name)
			}
		}
		for _, a := range gh.setParams() { // topology/swebench_params.go
			if a.set {
				c.errorf(a.rng, "Not an agentic generator attribute", "%q is an attribute of generator \"swebench\", not of \"agentic\".", a.name)
			}
		}
		return
	}
	g.Kind = gh.Kind
	agentic := []struct {
		set  bool
		rng  hcl.Range
		name string
	}{
		{gh.Turns != nil, gh.TurnsRange, "turns"},
		{gh.FirstTokens != nil, gh.FirstTokensRange, "first_tokens"}, {gh.AppendTokens != nil, gh.AppendTokensRange, "append_tokens"},
		{gh.OutputTokens != nil, gh.OutputTokensRange, "output_tokens"}, {gh.ThinkTime != nil, gh.ThinkTimeRange, "think_time"},
		{gh.SessionStagger != nil, gh.SessionStaggerRange, "session_stagger"},
	}
	if gh.Kind == "burst" {
		agentic = append(agentic, []struct {
			set  bool
			rng  hcl.Range
			name string
		}{{gh.Sessions != nil, gh.SessionsRange, "sessions"}, {gh.BlockTokens != nil, gh.BlockTokensRange, "block_tokens"},
			{gh.SystemTokens != nil, gh.SystemTokensRange, "system_tokens"},
			{gh.Content != nil, gh.ContentRange, "content"}, {gh.Requests != nil, gh.RequestsRange, "requests"},
			{gh.ActiveSessions != nil, gh.ActiveSessionsRange, "active_sessions"}}...)
	}
	for _, a := range agentic {
		if a.set {
			c.errorf(a.rng, "Unsupported generator attribute", "Generator %q does not take %q.", gh.Kind, a.name)
		}
	}
	if gh.Kind == "burst" {
		for _, a := range gh.setParams() {
			if a.set {
				c.errorf(a.rng, "Unsupported generator attribute", "Generator %q does not take %q.", gh.Kind, a.name)
			}
		}
		return
	}
	if gh.Sessions == nil {
		g.Sessions = SWEBenchSessions
	}
	if gh.BlockTokens == nil {
		g.BlockTokens = DefaultBlockTokens
	}
	g.Requests = checkNum(c, gh.Requests, gh.RequestsRange, SWEBenchRequests, "requests", "total requests", between(1, MaxRequests))
	g.ActiveSessions = checkNum(c, gh.ActiveSessions, gh.ActiveSessionsRange, 0, "active_sessions",
		"sessions kept active at once; 0 = the real 5.44 h timeline", between(0, MaxSessions))
	g.Content = "paper"
	if g.Requests < g.Sessions {
		c.errorf(gh.RequestsRange, "Too few requests", "requests (%d) must be at least sessions (%d).", g.Requests, g.Sessions)
	}
	if gh.Content != nil {
		g.Content = c.checkEnum(gh.Content, gh.ContentRange, g.Content, "content", swebenchContents...)
	}
	g.SWEBench = c.swebenchParams(gh, g.Content) // topology/swebench_params.go
}

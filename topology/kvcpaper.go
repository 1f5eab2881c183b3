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
	if spec.Router.Policy != "kvc" || len(spec.Decode) == 0 || rh == nil || rh.Body == nil {
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

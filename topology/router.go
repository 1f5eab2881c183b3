package topology

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
)

// Router parameter defaults (the KVC-Router spec defaults).
const (
	DefaultAlpha       = 1.0
	DefaultTauReject   = 3
	DefaultTauAppend   = 8192
	DefaultRho         = 0.95
	DefaultEpsilon     = 2
	DefaultBlockTokens = 24
	// DefaultLogCandidates is how many decode workers routing_log.jsonl
	// lists per try (the top ones by Algorithm 1's key): every one up to
	// 8 decode workers.
	DefaultLogCandidates = 8
)

// DefaultRouter returns a Router for policy with every parameter at its
// spec default. Parameters a policy does not take keep these defaults too,
// so code that reads, say, Rho never sees a zero.
func DefaultRouter(policy string) Router {
	allBlacklisted := ""
	if policy == "kvc" {
		allBlacklisted = AllBlacklistedLeastRejected // v1 = true in HCL makes it degenerate_fallback (kvcv1.go)
	}
	return Router{
		AllBlacklisted: allBlacklisted,
		Policy:         policy,
		Alpha:          DefaultAlpha,
		TauReject:      DefaultTauReject,
		TauAppend:      DefaultTauAppend,
		Rho:            DefaultRho,
		Epsilon:        DefaultEpsilon,
		BlockTokens:    DefaultBlockTokens,
		V1:             false,
		ReserveOutput:  true,
		RoutingLog:     true,
		LogCandidates:  DefaultLogCandidates,
	}
}

// policy is one entry of the router policy table: everything the HCL layer
// needs to know about a policy. Adding a policy means adding one entry to
// policies (and, if it has new parameters, fields to Router).
type policy struct {
	name string
	doc  string // one line, used in diagnostics
	// kinds are the worker kinds the policy routes to. The scenario must
	// declare at least one worker of each, and none of any other kind.
	kinds []Kind
	// fullMesh requires a link from every prefill worker to every decode
	// worker (the policy may pair any P with any D).
	fullMesh bool
	// params are the attributes the router block accepts, in the order
	// they are decoded. Anything else is HCL's "Unsupported argument".
	params []routerParam
	// local marks a bucket local policy used as a single-pool router: the
	// Spec gets one implicit bucket holding every fused worker (see
	// ImplicitBucket).
	local bool
	// sharesLocal says why this disaggregated policy's name is also a
	// local policy's ("" = it must not be): the router block label then
	// names this policy, and the local one is reached only through
	// local_router. Any other shared name is a collision
	// (TestPolicyNamesOnce, cluster's TestRegistryMatchesHCL).
	sharesLocal string
	// fusedHint is added to the "No prefill/decode workers" diagnostic
	// when the scenario has fused workers instead.
	fusedHint string
	// epsilonIsD: a router block without epsilon gets ε = |D|, the
	// spec's general default (topology/kvcpaper.go).
	epsilonIsD bool
}

// routerParam is one attribute of a router, global_router or local_router
// block: its name, a short description for diagnostics, and how to
// decode, validate and store it.
type routerParam struct {
	name  string
	help  string
	apply func(c *checker, attr *hcl.Attribute, ctx *hcl.EvalContext, out *routerOut)
}

// routerOut is what routing blocks decode into: the router block's
// Router, and the bucket routers (a router block with a local policy fills
// Local; global_router and local_router blocks fill Global and Local).
type routerOut struct {
	Router Router
	Local  LocalRouter
	Global GlobalRouter
}

// numParam declares a numeric parameter stored in *field(r) and validated by
// check (which returns "" when the value is fine, else what is wrong).
func numParam[T int | float64](name, help string, field func(*Router) *T, check func(T) string) routerParam {
	return numField(name, help, func(o *routerOut) *T { return field(&o.Router) }, check)
}

// numField is numParam for any field of routerOut.
func numField[T int | float64](name, help string, field func(*routerOut) *T, check func(T) string) routerParam {
	return routerParam{name: name, help: help, apply: func(c *checker, attr *hcl.Attribute, ctx *hcl.EvalContext, o *routerOut) {
		var v T
		expr := attr.Expr
		if _, isInt := any(v).(int); isInt {
			expr = wholeExpr{expr} // never truncated (wholeint.go)
		}
		if !c.decoded(gohcl.DecodeExpression(expr, ctx, &v)) {
			return
		}
		*field(o) = checkNum(c, &v, attr.Range, *field(o), name, help, check)
	}}
}

// durationField declares a duration parameter (a string such as "10us")
// of at least minimum, stored in *field(o).
func durationField(name, help string, minimum time.Duration, field func(*routerOut) *time.Duration) routerParam {
	return routerParam{name: name, help: help, apply: func(c *checker, attr *hcl.Attribute, ctx *hcl.EvalContext, o *routerOut) {
		var v string
		if !c.decoded(gohcl.DecodeExpression(attr.Expr, ctx, &v)) {
			return
		}
		*field(o) = c.checkDuration(&v, attr.Range, *field(o), minimum, name, help)
	}}
}

// boolParam declares a boolean parameter stored in *field(r).
func boolParam(name, help string, field func(*Router) *bool) routerParam {
	return routerParam{name: name, help: help, apply: func(c *checker, attr *hcl.Attribute, ctx *hcl.EvalContext, o *routerOut) {
		var v bool
		if c.decoded(gohcl.DecodeExpression(attr.Expr, ctx, &v)) {
			*field(&o.Router) = v
		}
	}}
}

// Parameters shared by several policies.
var (
	paramAlpha = numParam("alpha", "the sticky bonus α",
		func(r *Router) *float64 { return &r.Alpha }, atLeast(0.0))
	paramTauReject = numParam("tau_reject", "the blacklist threshold τ_reject",
		func(r *Router) *int { return &r.TauReject }, atLeast(1))
	paramTauAppend = numParam("tau_append", "the largest append (tokens) served Direct, τ_append",
		func(r *Router) *int { return &r.TauAppend }, atLeast(0))
	paramRho = numParam("rho", "the capacity high-water mark ρ, a fraction of K_d",
		func(r *Router) *float64 { return &r.Rho }, unitInterval)
	paramEpsilon = numParam("epsilon", "the number of Route→Admit tries before Fallback, ε",
		func(r *Router) *int { return &r.Epsilon }, atLeast(1))
	paramBlockTokens = numParam("block_tokens", "the router block size in tokens",
		func(r *Router) *int { return &r.BlockTokens }, atLeast(1))
	paramV1 = boolParam("v1", "omit reset-on-success (v1 behaviour)",
		func(r *Router) *bool { return &r.V1 })
	paramReserveOutput = boolParam("reserve_output", "reserve output tokens at admission",
		func(r *Router) *bool { return &r.ReserveOutput })
	paramNetCapacity = boolParam("net_capacity", "count a resident session's own KV once in the capacity check",
		func(r *Router) *bool { return &r.NetCapacity })
	paramOwnOverlap = boolParam("own_overlap", "count Route's overlap over the session's own resident prefix only (opt-in remedy)",
		func(r *Router) *bool { return &r.OwnOverlap })
	paramLoadFloor = numParam("load_floor", "skip unpinned decode workers with load_floor or more requests in flight above the least-loaded candidate (0 = off; opt-in remedy)",
		func(r *Router) *int { return &r.LoadFloor }, atLeast(0))
	paramRoutingLog = boolParam("routing_log", "write the P/D routing decisions to routing_log.jsonl (false: an empty file, and no cost)",
		func(r *Router) *bool { return &r.RoutingLog })
	paramLogCandidates = numParam("log_candidates", "how many decode workers routing_log.jsonl lists per try, the top ones by Algorithm 1's key (the chosen one always)",
		func(r *Router) *int { return &r.LogCandidates }, atLeast(1))
)

var disaggregated = []Kind{KindPrefill, KindDecode}

// policies is the router policy table, keyed by the router block label:
// the disaggregated policies, then every bucket local policy but kvc (the
// label is the disaggregated KVC-Router's) over one pool of fused workers.
// The constructors are cluster.Registry (a test there checks the names).
var policies = append(disaggregatedPolicies, singlePoolPolicies()...)

// disaggregatedPolicies are the router policies over prefill and decode
// workers.
var disaggregatedPolicies = []policy{
	{
		name:        "kvc",
		doc:         "KVC-Router: session-aware routing over disaggregated prefill and decode workers",
		kinds:       disaggregated,
		fullMesh:    true,
		sharesLocal: `router "kvc" is the disaggregated KVC-Router; its Algorithm 1 scoring over fused workers is local_router "kvc" in the bucket form`,
		fusedHint:   ` To score fused workers with KVC's Algorithm 1, use bucket routing with local_router "kvc".`,
		epsilonIsD:  true,
		params: []routerParam{
			paramAlpha, paramTauReject, paramTauAppend, paramRho, paramEpsilon,
			paramBlockTokens, paramV1, paramAllBlacklisted, paramReserveOutput, // topology/kvcv1.go
			paramNetCapacity,
			paramResidentAppend, paramPrefillCacheBackup, paramDPSync, // topology/kvcpaper.go
			paramOwnOverlap, paramLoadFloor, paramRoutingLog, paramLogCandidates,
		},
	},
	{
		name:     "vanilla",
		doc:      "vanilla P/D: round-robin prefill worker, then round-robin decode worker",
		kinds:    disaggregated,
		fullMesh: true,
		params:   []routerParam{paramBlockTokens, paramRoutingLog},
	},
	{
		name:     "sticky_only",
		doc:      "sticky-only baseline: a session stays on the decode worker it first went to; no scoring, no admission",
		kinds:    disaggregated,
		fullMesh: true,
		params:   []routerParam{paramBlockTokens, paramRoutingLog},
	},
	{
		name:     "kv_score",
		doc:      "KVC's Algorithm 1 scoring without worker-side admission (router-side residency belief)",
		kinds:    disaggregated,
		fullMesh: true,
		params:   []routerParam{paramAlpha, paramBlockTokens, paramRoutingLog, paramLogCandidates},
	},
}

// SharedPolicyNames returns the names that are both a disaggregated
// router policy and a local policy on purpose, each with the reason.
func SharedPolicyNames() map[string]string {
	out := map[string]string{}
	for _, p := range disaggregatedPolicies {
		if p.sharesLocal != "" {
			out[p.name] = p.sharesLocal
		}
	}
	return out
}

// PolicyParams returns the attributes a router block of policy takes, in
// table order (nil for an unknown policy).
func PolicyParams(policy string) []string {
	p := lookupPolicy(policy)
	if p == nil {
		return nil
	}
	out := make([]string, len(p.params))
	for i, prm := range p.params {
		out[i] = prm.name
	}
	return out
}

// EpsilonDefaultsToD reports whether a router block of policy without
// epsilon gets ε = |D| (kvc) rather than DefaultEpsilon.
func EpsilonDefaultsToD(policy string) bool {
	p := lookupPolicy(policy)
	return p != nil && p.epsilonIsD
}

// Policies returns the router policy names the HCL format accepts, sorted.
func Policies() []string { return rowNames(policies) }

func lookupPolicy(name string) *policy { return findRow(policies, name) }

// unknownPolicy reports the policy label of rh as unknown to its tier
// (kind: "router", "global router", "local router"), whose policies are
// known: a did-you-mean among them, hint (which other tier has the name,
// or ""), and then intro and the list of known.
func (c *checker) unknownPolicy(rh *routerHCL, kind string, known []string, hint, intro string) {
	c.errorf(rh.PolicyRange, "Unknown "+kind+" policy",
		"There is no %s policy named %q.%s%s %s %s.",
		kind, rh.Policy, didYouMean(rh.Policy, known), hint, intro, quotedList(known))
}

// decodeRouter decodes a router block with the schema of its policy. It
// returns nil when the policy is unknown.
func decodeRouter(c *checker, rh *routerHCL, ctx *hcl.EvalContext) (*policy, routerOut) {
	pol := lookupPolicy(rh.Policy)
	if pol == nil {
		hint := policyElsewhere(rh.Policy, lookupGlobal(rh.Policy) != nil,
			"a global_router policy: bucket routing takes bucket, global_router and local_router blocks instead of a router block")
		c.unknownPolicy(rh, "router", Policies(), hint, "The known policies are")
		return nil, routerOut{Router: DefaultRouter(rh.Policy)}
	}
	out := routerOut{Router: DefaultRouter(pol.name)}
	if pol.local {
		out.Local = DefaultLocalRouter(pol.name)
	}
	decodeParams(c, rh.Body, pol.params, ctx, &out)
	return pol, out
}

// decodeParams decodes body with exactly params as its attributes.
func decodeParams(c *checker, body hcl.Body, params []routerParam, ctx *hcl.EvalContext, out *routerOut) {
	s := &hcl.BodySchema{}
	for _, prm := range params {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: prm.name})
	}
	content, diags := body.Content(s)
	c.decoded(diags)
	if content == nil {
		return
	}
	for _, prm := range params {
		if attr := content.Attributes[prm.name]; attr != nil {
			prm.apply(c, attr, ctx, out)
		}
	}
}

func kindList(kinds []Kind) string {
	s := ""
	for i, k := range kinds {
		switch {
		case i == 0:
		case i == len(kinds)-1:
			s += " and "
		default:
			s += ", "
		}
		s += string(k)
	}
	return s
}

func (p *policy) uses(k Kind) bool {
	for _, x := range p.kinds {
		if x == k {
			return true
		}
	}
	return false
}

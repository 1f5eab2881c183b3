package topology

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
)

// The KVC router's reading of the fully-blacklisted case (issue 19;
// Router.AllBlacklisted, policy.KVCConfig.DegenerateFallback). The spec's
// two texts differ: Algorithm 1 lines 3–4 return the least-rejected decode
// worker and ask it for admission; §3.4 describes v1's failure as a
// degraded round-robin Fallback in which every retry bumps a counter, so the
// session thrashes between decode workers.
const (
	AllBlacklistedDegenerate    = "degenerate_fallback" // §3.4: round-robin Fallback, every retry bumps rejects[s,d]
	AllBlacklistedLeastRejected = "least_rejected"      // Algorithm 1 lines 3–4
)

var allBlacklistedValues = []string{AllBlacklistedDegenerate, AllBlacklistedLeastRejected}

// paramAllBlacklisted is kvc's all_blacklisted.
var paramAllBlacklisted = routerParam{
	name: "all_blacklisted",
	help: `what the KVC router does when every untried decode worker blacklists the session: "degenerate_fallback" (spec §3.4, the default when v1 = true) or "least_rejected" (Algorithm 1 lines 3–4, the default otherwise)`,
	apply: func(c *checker, attr *hcl.Attribute, ctx *hcl.EvalContext, o *routerOut) {
		var v string
		if !c.decoded(gohcl.DecodeExpression(attr.Expr, ctx, &v)) {
			return
		}
		o.Router.AllBlacklisted = c.checkEnum(&v, attr.Expr.Range(), "", "all_blacklisted", allBlacklistedValues...)
	},
}

// defaultAllBlacklisted makes all_blacklisted degenerate_fallback when a
// kvc router block sets v1 = true and not all_blacklisted (DefaultRouter
// gives kvc least_rejected, the v2 default).
func defaultAllBlacklisted(rh *routerHCL, spec *Spec) {
	if spec.Router.Policy != "kvc" || !spec.Router.V1 || rh == nil || rh.Body == nil {
		return
	}
	attrs, _ := rh.Body.JustAttributes()
	if _, set := attrs["all_blacklisted"]; !set {
		spec.Router.AllBlacklisted = AllBlacklistedDegenerate
	}
}

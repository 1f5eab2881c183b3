package topology

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
)

// PolicyBuckets is Router.Policy in the bucket form (no router block).
const PolicyBuckets = "buckets"

// ImplicitBucket is the name of the one bucket of a single-pool router
// with a local policy.
const ImplicitBucket = "all"

// Global router policies (global_router block labels).
const (
	GlobalStrictInputLength = "strict_input_length"
	GlobalBucketScore       = "bucket_score"
)

// Bucket router defaults (those of the source design's example).
const (
	DefaultMetaStoreTTL        = 1000 * time.Second
	DefaultProbeLatency        = 10 * time.Microsecond
	DefaultProbeTopK           = 4
	DefaultLoadAlpha           = 0.1
	DefaultScoreAlpha          = 1.0
	DefaultScoreBeta           = 0.1
	DefaultPrefixK             = 8
	DefaultFanOut              = 0
	DefaultOverloadFactor      = 2.0
	DefaultCacheThreshold      = 0.3 // cache_aware_dp (SGLang's current default; older releases 0.5)
	DefaultBalanceAbs          = 64  // cache_aware_dp (older releases 32)
	DefaultBalanceRel          = 1.5 // cache_aware_dp (older releases 1.0001)
	DefaultLengthPenaltyWeight = 1.0
	DefaultLoadWeight          = 1.0
	DefaultCacheWeight         = 1.0
)

// usesBuckets reports whether the file is in the bucket form.
func (fh *fileHCL) usesBuckets() bool {
	return len(fh.Buckets) > 0 || len(fh.GlobalRouters) > 0 || len(fh.LocalRouters) > 0
}

// bucketRouting checks the bucket form and fills spec's bucket fields.
func (c *checker) bucketRouting(spec *Spec, fh *fileHCL, ctx *hcl.EvalContext, byName map[string]declared, fileStart hcl.Range) {
	spec.Router = DefaultRouter(PolicyBuckets)
	first := fileStart
	switch {
	case len(fh.Buckets) > 0:
		first = fh.Buckets[0].DefRange
	case len(fh.GlobalRouters) > 0:
		first = fh.GlobalRouters[0].DefRange
	default:
		first = fh.LocalRouters[0].DefRange
	}
	for _, rh := range fh.Routers {
		c.errorf(rh.DefRange, "Conflicting routing blocks",
			"This scenario routes through buckets (see %s), so it cannot also have a router block. Use either one router block over one pool of workers, or bucket, global_router and local_router blocks over fused workers.", first)
	}
	noun := map[Kind]string{KindPrefill: "prefill", KindDecode: "decode"}
	for _, group := range [][]Worker{spec.Prefill, spec.Decode} {
		for _, w := range group {
			c.errorf(byName[w.Name].wh.DefRange, "Worker not used by bucket routing",
				"Bucket routing sends requests to fused workers only, so %s worker %q would never receive a request. Remove it, or route with a router block (\"kvc\", \"vanilla\") for disaggregated serving.", noun[w.Kind], w.Name)
		}
	}

	// Global router: at most one, strict_input_length by default.
	spec.GlobalRouter = DefaultGlobalRouter(GlobalStrictInputLength)
	if gh := firstOf(c, "global_router", fh.GlobalRouters, routerDef, ""); gh != nil {
		if gp := lookupGlobal(gh.Policy); gp == nil {
			hint := policyElsewhere(gh.Policy, lookupLocal(gh.Policy) != nil, "a local_router policy (it picks an instance inside a bucket)")
			c.unknownPolicy(gh, "global router", GlobalPolicies(), hint, "The global router picks a bucket; its policies are")
		} else {
			out := routerOut{Global: DefaultGlobalRouter(gp.name)}
			decodeParams(c, gh.Body, gp.params, ctx, &out)
			spec.GlobalRouter = out.Global
		}
	}

	// Local router: exactly one.
	if lh := firstOf(c, "local_router", fh.LocalRouters, routerDef, " Every bucket uses it."); lh == nil {
		c.errorf(first, "Missing local_router block",
			"Bucket routing needs one local_router block, shared by every bucket; its label is the policy that picks an instance inside a bucket, one of %s. For example: local_router \"least_loaded\" { }.", quotedList(LocalPolicies()))
	} else if lp := lookupLocal(lh.Policy); lp == nil {
		hint := policyElsewhere(lh.Policy, lookupGlobal(lh.Policy) != nil, "a global_router policy (it picks a bucket)")
		c.unknownPolicy(lh, "local router", LocalPolicies(), hint, "The local router picks an instance inside a bucket; its policies are")
	} else {
		out := routerOut{Local: DefaultLocalRouter(lp.name)}
		decodeParams(c, lh.Body, localParams, ctx, &out)
		spec.LocalRouter = out.Local
	}

	if len(fh.Buckets) == 0 {
		c.errorf(first, "No buckets",
			"Bucket routing needs at least one bucket block, e.g. bucket \"short\" { input_tokens = [0, 32768]  instances = [\"w0\"] }.")
		return
	}
	spec.Buckets = c.buckets(fh.Buckets, ctx, byName, spec.Fused)
}

// routerDef is a router, global_router or local_router block's DefRange
// (firstOf).
func routerDef(b *routerHCL) hcl.Range { return b.DefRange }

// policyElsewhere is unknownPolicy's hint for a policy name that another
// block knows (known): " "name" is <what>.", or "".
func policyElsewhere(name string, known bool, what string) string {
	if !known {
		return ""
	}
	return fmt.Sprintf(" %q is %s.", name, what)
}

// bucketRange is a bucket's checked range, and where it was written.
type bucketRange struct {
	b     *bucketHCL
	lo    int
	hi    int
	valid bool
}

// buckets checks the bucket blocks: names, ranges (no overlaps, no gaps)
// and instances (fused workers, each in exactly one bucket).
func (c *checker) buckets(bhs []bucketHCL, ctx *hcl.EvalContext, byName map[string]declared, fused []Worker) []Bucket {
	var out []Bucket
	names := map[string]*bucketHCL{}
	type owner struct {
		b   *bucketHCL
		rng hcl.Range
	}
	owners := map[string]owner{} // worker → the bucket holding it
	var fusedNames []string
	for _, w := range fused {
		fusedNames = append(fusedNames, w.Name)
	}
	// incomplete: some instance list could not be read, or names an
	// unknown worker; a worker in no bucket is then no news.
	incomplete := false
	ranges := make([]bucketRange, len(bhs))

	for i := range bhs {
		bh := &bhs[i]
		if !validWorkerName(bh.Name) {
			c.errorf(bh.NameRange, "Invalid bucket name",
				"Bucket names must start with a letter or digit and contain only letters, digits, '_', '.' and '-' (they appear in logs and CSV files); got %q.", bh.Name)
		}
		if prev, dup := names[bh.Name]; dup {
			c.errorf(bh.NameRange, "Duplicate bucket name",
				"A bucket named %q was already declared at %s. Bucket names must be unique.", bh.Name, prev.DefRange)
		} else {
			names[bh.Name] = bh
		}

		ranges[i] = c.bucketRange(bh, ctx)
		b := Bucket{Name: bh.Name, Min: ranges[i].lo, Max: ranges[i].hi}
		b.Faults = c.nodeFaults(bh.Crashes, nil)
		b.RemoteFetchBandwidth, _ = c.checkBandwidth(bh.RemoteFetchBandwidth, bh.RemoteFetchBandwidthRange, b.RemoteFetchBandwidth,
			"remote_fetch_bandwidth", "the RDMA fabric between the bucket's instances")

		if bh.InstancesRange == (hcl.Range{}) {
			c.missingAttr(bh.Body, "instances", "the fused workers of the bucket, e.g. instances = [\"w0\", \"w1\"]")
		}
		var insts []string
		if bh.InstancesRange == (hcl.Range{}) || c.bad(bh.InstancesRange) ||
			!c.notNull(bh.Instances, ctx, "instances", "a list of fused worker names") ||
			!c.decoded(gohcl.DecodeExpression(bh.Instances, ctx, &insts)) {
			incomplete = true
			out = append(out, b)
			continue
		}
		elems := elemRanges(bh.Instances, len(insts))
		if len(insts) == 0 {
			c.errorf(bh.InstancesRange, "Empty bucket",
				"Bucket %q has no instances; list at least one fused worker, e.g. instances = [%q].", bh.Name, firstOr(fusedNames, "w0"))
		}
		seen := map[string]bool{}
		for j, name := range insts {
			rng := elems[j]
			d, ok := byName[name]
			switch {
			case !ok:
				incomplete = true
				c.errorf(rng, "Unknown worker",
					"Bucket %q lists %q, which is not a declared worker.%s A bucket's instances are fused workers: fused \"NAME\" { ... }.",
					bh.Name, name, didYouMean(name, fusedNames))
				continue
			case d.kind != KindFused:
				c.errorf(rng, "Invalid bucket instance",
					"Bucket %q lists %s worker %q (declared at %s), but a bucket's instances are fused workers.", bh.Name, d.kind, name, d.wh.DefRange)
				continue
			case seen[name]:
				c.errorf(rng, "Duplicate bucket instance", "Bucket %q lists %q twice.", bh.Name, name)
				continue
			}
			seen[name] = true
			if prev, taken := owners[name]; taken {
				c.errorf(rng, "Worker in two buckets",
					"Fused worker %q is already an instance of bucket %q (at %s); a worker belongs to at most one bucket, whose cache it keeps.",
					name, prev.b.Name, prev.rng)
				continue
			}
			owners[name] = owner{bh, rng}
			b.Instances = append(b.Instances, name)
		}
		out = append(out, b)
	}

	// Every fused worker serves some bucket (unless a misspelt instance
	// name already explains why one does not).
	if !incomplete {
		for _, w := range fused {
			if _, ok := owners[w.Name]; !ok {
				c.errorf(byName[w.Name].wh.DefRange, "Worker in no bucket",
					"Fused worker %q is an instance of no bucket, so it would never receive a request. Add it to a bucket's instances, or remove it.", w.Name)
			}
		}
	}

	c.tiling(ranges)
	return out
}

// bucketRange checks input_tokens = [MIN, MAX].
func (c *checker) bucketRange(bh *bucketHCL, ctx *hcl.EvalContext) bucketRange {
	br := bucketRange{b: bh}
	if bh.InputTokensRange == (hcl.Range{}) {
		c.missingAttr(bh.Body, "input_tokens", "the bucket's inclusive range of input lengths, e.g. input_tokens = [0, 32768]")
		return br
	}
	if c.bad(bh.InputTokensRange) || !c.notNull(bh.InputTokens, ctx, "input_tokens", "[MIN, MAX]") {
		return br
	}
	var v []int
	if !c.decoded(gohcl.DecodeExpression(wholeExpr{bh.InputTokens}, ctx, &v)) {
		return br
	}
	const usage = "\"input_tokens\" is the bucket's inclusive range of input lengths, [MIN, MAX], e.g. input_tokens = [0, 32768]."
	if len(v) != 2 {
		c.errorf(bh.InputTokensRange, "Invalid input_tokens", "%s Got %d numbers.", usage, len(v))
		return br
	}
	elems := elemRanges(bh.InputTokens, 2)
	switch {
	case v[0] < 0:
		c.errorf(elems[0], "Invalid input_tokens", "%s MIN must be at least 0; got %d.", usage, v[0])
		return br
	case v[0] > v[1]:
		c.errorf(elems[1], "Invalid input_tokens", "%s MAX must be at least MIN (%d); got %d.", usage, v[0], v[1])
		return br
	}
	br.lo, br.hi, br.valid = v[0], v[1], true
	return br
}

// tiling checks that the valid ranges neither overlap nor leave a gap:
// every input length in [min of all, max of all] maps to exactly one
// bucket. An overlap points at the later bucket in file order; a gap at
// the bucket after it.
func (c *checker) tiling(ranges []bucketRange) {
	overlap := false
	for j := range ranges {
		b := ranges[j]
		if !b.valid {
			continue
		}
		for _, a := range ranges[:j] {
			if a.valid && a.lo <= b.hi && b.lo <= a.hi {
				overlap = true
				c.errorf(b.b.InputTokensRange, "Overlapping buckets",
					"Bucket %q [%d, %d] overlaps bucket %q [%d, %d] (declared at %s): input lengths %d to %d would map to both. Every input length must map to exactly one bucket.",
					b.b.Name, b.lo, b.hi, a.b.Name, a.lo, a.hi, a.b.DefRange, max(a.lo, b.lo), min(a.hi, b.hi))
				break
			}
		}
	}
	if overlap {
		return
	}
	var sorted []bucketRange
	for _, r := range ranges {
		if r.valid {
			sorted = append(sorted, r)
		}
	}
	slices.SortFunc(sorted, func(a, b bucketRange) int { return a.lo - b.lo })
	for k := 1; k < len(sorted); k++ {
		a, b := sorted[k-1], sorted[k]
		if b.lo > a.hi+1 {
			c.errorf(b.b.InputTokensRange, "Gap between buckets",
				"No bucket covers input lengths %d to %d, between bucket %q [%d, %d] and bucket %q [%d, %d]. Every length from %d to %d must map to exactly one bucket: start %q at %d, or end %q at %d.",
				a.hi+1, b.lo-1, a.b.Name, a.lo, a.hi, b.b.Name, b.lo, b.hi,
				sorted[0].lo, sorted[len(sorted)-1].hi, b.b.Name, a.hi+1, a.b.Name, b.lo-1)
		}
	}
}

// notNull reports whether expr evaluates to a non-null value, adding a
// diagnostic when it is null (and recording evaluation errors).
func (c *checker) notNull(expr hcl.Expression, ctx *hcl.EvalContext, name, what string) bool {
	v, diags := expr.Value(ctx)
	if !c.decoded(diags) {
		return false
	}
	if v.IsNull() {
		c.errorf(expr.Range(), fmt.Sprintf("Invalid value for %q", name), "%q must be %s, not null.", name, what)
		return false
	}
	return true
}

// missingAttr reports a required attribute absent from body, as HCL would
// (at the block's opening brace).
func (c *checker) missingAttr(body hcl.Body, name, what string) {
	d := &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Missing required argument",
		Detail:   fmt.Sprintf("The argument %q is required, but no definition was found: %s.", name, what),
	}
	if body != nil {
		d.Subject = body.MissingItemRange().Ptr()
	}
	c.diags = append(c.diags, d)
}

// elemRanges returns the source ranges of the n elements of a tuple
// expression written literally ([a, b, ...]); otherwise (a variable, a
// function call) every element gets the whole expression's range.
func elemRanges(expr hcl.Expression, n int) []hcl.Range {
	out := make([]hcl.Range, n)
	exprs, diags := hcl.ExprList(expr)
	for i := range out {
		if !diags.HasErrors() && len(exprs) == n {
			out[i] = exprs[i].Range()
		} else {
			out[i] = expr.Range()
		}
	}
	return out
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// implicitBucket is the one bucket of a single-pool local policy: every
// fused worker, every input length.
func implicitBucket(fused []Worker) Bucket {
	b := Bucket{Name: ImplicitBucket, Min: 0, Max: math.MaxInt}
	for _, w := range fused {
		b.Instances = append(b.Instances, w.Name)
	}
	return b
}

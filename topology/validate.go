package topology

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// validWorkerName reports whether s starts with an ASCII letter or digit
// and holds only those, '_', '.' and '-' (the regexp
// ^[A-Za-z0-9][A-Za-z0-9_.-]*$, kept in validate_ref_test.go, without
// compiling it at every process start).
func validWorkerName(s string) bool {
	if s == "" || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// alnum reports whether c is an ASCII letter or digit.
func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// declared is a worker's kind and where it was declared.
type declared struct {
	kind Kind
	wh   *workerHCL
}

// build turns the decoded file into a Spec, adding a diagnostic for every
// violated rule.
func (c *checker) build(filename string, fh *fileHCL, ctx *hcl.EvalContext, fileStart hcl.Range) *Spec {
	spec := &Spec{Source: filename}
	if fh.Name != nil {
		spec.Name = *fh.Name
	}

	// Workers, in file order per kind; names unique across kinds.
	byName := map[string]declared{}
	var order []string
	addWorkers := func(kind Kind, whs []workerHCL, dst *[]Worker) {
		for i := range whs {
			wh := &whs[i]
			w := c.worker(kind, wh)
			if !validWorkerName(wh.Name) {
				c.errorf(wh.NameRange, "Invalid worker name",
					"Worker names must start with a letter or digit and contain only letters, digits, '_', '.' and '-' (they appear in logs and CSV files); got %q.", wh.Name)
			}
			if prev, dup := byName[wh.Name]; dup {
				c.errorf(wh.NameRange, "Duplicate worker name",
					"A %s worker named %q was already declared at %s. Worker names must be unique across prefill, decode and fused blocks.",
					prev.kind, wh.Name, prev.wh.DefRange)
				continue
			}
			*dst = append(*dst, w)
			byName[wh.Name] = declared{kind: kind, wh: wh}
			order = append(order, wh.Name)
		}
	}
	addWorkers(KindPrefill, fh.Prefill, &spec.Prefill)
	addWorkers(KindDecode, fh.Decode, &spec.Decode)
	addWorkers(KindFused, fh.Fused, &spec.Fused)
	nWorkers := len(spec.Prefill) + len(spec.Decode) + len(spec.Fused)
	if nWorkers == 0 {
		c.errorf(fileStart, "No workers",
			"A scenario needs at least one worker: declare prefill \"NAME\" { ... } and decode \"NAME\" { ... } blocks (disaggregated policies) or fused \"NAME\" { ... } blocks.")
	}

	c.links(spec, fh.Links, byName, order)
	c.mesh(spec, fh.Mesh, ctx) // mesh.go: every pair the link blocks left out

	// Routing: one router block, or the bucket form.
	if fh.usesBuckets() {
		c.bucketRouting(spec, fh, ctx, byName, fileStart)
	} else {
		c.router(spec, fh, ctx, byName, fileStart, nWorkers)
	}

	// Workload: at most one.
	spec.Workload = DefaultWorkload()
	if wh := firstOf(c, "workload", fh.Workloads, func(b *workloadHCL) hcl.Range { return b.DefRange }, ""); wh != nil {
		spec.Workload = c.workload(filename, wh)
	}
	spec.Recovery = c.recovery(fh.Recovery)
	spec.SLO = c.slo(fh.SLOs)
	c.chaos(spec, fh.Chaos)
	return spec
}

// router checks the single router block and the workers its policy needs.
func (c *checker) router(spec *Spec, fh *fileHCL, ctx *hcl.EvalContext, byName map[string]declared, fileStart hcl.Range, nWorkers int) {
	if len(fh.Routers) == 0 {
		c.errorf(fileStart, "Missing router block",
			"A scenario needs exactly one router block; its label is the policy, one of %s. For example: router \"kvc\" { }. Or route over fused workers in input-length buckets with bucket, global_router and local_router blocks.", quotedList(Policies()))
		return
	}
	rh := firstOf(c, "router", fh.Routers, routerDef, "")
	pol, out := decodeRouter(c, rh, ctx)
	spec.Router = out.Router
	defaultEpsilon(rh, spec)        // topology/kvcpaper.go
	defaultAllBlacklisted(rh, spec) // topology/kvcv1.go
	if pol == nil || nWorkers == 0 {
		return
	}
	if c.opts.Router != "" && rh.PolicyRange.Filename == routerFile(c.opts.Router) && !canRun(pol, fh) {
		var fit []string
		for i := range policies {
			if canRun(&policies[i], fh) {
				fit = append(fit, policies[i].name)
			}
		}
		c.errorf(rh.PolicyRange, "Policy cannot run on this cluster",
			"--router %s: the %q policy (%s) routes to %s workers, but this cluster has %s. Policies this cluster can run: %s.",
			pol.name, pol.name, pol.doc, kindList(pol.kinds), clusterKinds(fh), quotedList(fit))
		return
	}
	c.policyTopology(pol, rh, spec, fh, byName)
	if pol.local {
		// One pool: an implicit bucket holding every fused worker.
		spec.Buckets = []Bucket{implicitBucket(spec.Fused)}
		spec.GlobalRouter = DefaultGlobalRouter(GlobalStrictInputLength)
		spec.LocalRouter = out.Local
	}
}

// policyTopology checks the worker kinds and links a policy needs.
func (c *checker) policyTopology(pol *policy, rh *routerHCL, spec *Spec, fh *fileHCL, byName map[string]declared) {
	count := map[Kind]int{KindPrefill: len(fh.Prefill), KindDecode: len(fh.Decode), KindFused: len(fh.Fused)}
	for _, k := range pol.kinds {
		if count[k] == 0 {
			hint := ""
			if count[KindFused] > 0 {
				hint = pol.fusedHint
			}
			c.errorf(rh.PolicyRange, fmt.Sprintf("No %s workers", k),
				"The %q policy (%s) needs at least one %s worker: add a %s \"NAME\" { ... } block.%s", pol.name, pol.doc, k, k, hint)
		}
	}
	unused := func(k Kind, whs []workerHCL) {
		if pol.uses(k) {
			return
		}
		for i := range whs {
			c.errorf(whs[i].DefRange, "Worker not used by the router policy",
				"The %q policy routes to %s workers only, so %s worker %q would never receive a request. Remove it or choose another policy.",
				pol.name, kindList(pol.kinds), k, whs[i].Name)
		}
	}
	unused(KindPrefill, fh.Prefill)
	unused(KindDecode, fh.Decode)
	unused(KindFused, fh.Fused)

	if !pol.fullMesh {
		return
	}
	linked := map[[2]string]bool{}
	for _, l := range spec.Links {
		linked[[2]string{l.From, l.To}] = true
	}
	for _, d := range spec.Decode {
		var missing []string
		for _, p := range spec.Prefill {
			if !linked[[2]string{p.Name, d.Name}] {
				missing = append(missing, p.Name)
			}
		}
		if len(missing) == 0 {
			continue
		}
		noun := "worker"
		if len(missing) > 1 {
			noun = "workers"
		}
		c.errorf(byName[d.Name].wh.DefRange, "Missing link",
			"The %q policy may move KV from any prefill worker to any decode worker, but decode worker %q has no link from prefill %s %s. Add, for example:\n\nlink %q %q {\n  transport = \"rdma\"\n  device    = \"mlx5_0\"\n  bandwidth = \"200Gbps\"\n}",
			pol.name, d.Name, noun, quotedList(missing), missing[0], d.Name)
	}
}

// canRun reports whether pol can route over the workers fh declares: at
// least one worker of each kind it needs and none of another kind.
func canRun(pol *policy, fh *fileHCL) bool {
	count := map[Kind]int{KindPrefill: len(fh.Prefill), KindDecode: len(fh.Decode), KindFused: len(fh.Fused)}
	for k, n := range count {
		if n > 0 != pol.uses(k) {
			return false
		}
	}
	return true
}

// clusterKinds describes the worker kinds fh declares ("only fused
// workers", "prefill and decode workers").
func clusterKinds(fh *fileHCL) string {
	var kinds []Kind
	for _, k := range []struct {
		kind Kind
		n    int
	}{{KindPrefill, len(fh.Prefill)}, {KindDecode, len(fh.Decode)}, {KindFused, len(fh.Fused)}} {
		if k.n > 0 {
			kinds = append(kinds, k.kind)
		}
	}
	if len(kinds) == 1 {
		return "only " + string(kinds[0]) + " workers"
	}
	return kindList(kinds) + " workers"
}

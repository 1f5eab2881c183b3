package topology

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Command-line overrides (Options.Set and Options.Router) are applied while
// the scenario body is decoded, by wrapping it: a --set attribute is an
// attribute of the block its path names, with a source range in a
// pseudo-file named after the argument ("--set router.tau_append=4096"),
// so it is decoded and validated exactly like the same attribute in the
// file, and its diagnostics name the argument. A path is
//
//	[BLOCK_TYPE [LABEL...]]... ATTRIBUTE
//
// e.g. name, router.tau_append, decode.d1.kv_budget_tokens,
// link.p0.d0.bandwidth, workload.generator.agentic.sessions; "*" matches
// any one label (decode.*.gpu). A path that names no attribute of the
// scenario is an error with a did-you-mean. A value is typed like a -var
// value (a number or bool when it looks like one, else a string); a value
// starting with [, { or " is an HCL expression (instances=["s0","s1"]).

// setting is one --set argument.
type setting struct {
	arg     string
	path    []string
	value   hcl.Expression
	rng     hcl.Range
	applied bool
}

// overrides holds the command line's --set and --router and what they
// matched.
type overrides struct {
	sets []*setting
	// router is the --router policy; routerRng its pseudo-file range.
	router    string
	routerRng hcl.Range
	swapped   bool
	swap      *RouterSwap // what the swap did (nil: no --router)
	// seen holds every attribute path the scenario's schema offered, for
	// did-you-mean suggestions.
	seen map[string]bool
}

// routerFile is the pseudo-file name of the --router argument.
func routerFile(policy string) string { return "--router " + policy }

// newOverrides parses opts.Set and opts.Router. files receives a pseudo
// file per argument so that diagnostics render it as a snippet.
func newOverrides(opts Options, files map[string]*hcl.File) (*overrides, hcl.Diagnostics) {
	ov := &overrides{seen: map[string]bool{}}
	var diags hcl.Diagnostics
	for _, arg := range opts.Set {
		name := "--set " + arg
		files[name] = &hcl.File{Bytes: []byte(arg)}
		whole := hcl.Range{Filename: name, Start: hcl.Pos{Line: 1, Column: 1}, End: hcl.Pos{Line: 1, Column: 1 + len(arg), Byte: len(arg)}}
		p, v, ok := strings.Cut(arg, "=")
		path := strings.Split(strings.TrimSpace(p), ".")
		valid := ok && p != ""
		for _, s := range path {
			valid = valid && s != ""
		}
		if !valid {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: "Invalid --set",
				Detail:  fmt.Sprintf("--set takes PATH=VALUE, e.g. router.tau_append=4096 or decode.*.gpu=H100-SXM; got %q.", arg),
				Subject: whole.Ptr(),
			})
			continue
		}
		start := hcl.Pos{Line: 1, Column: len(p) + 2, Byte: len(p) + 1}
		rng := hcl.Range{Filename: name, Start: start, End: hcl.Pos{Line: 1, Column: start.Column + len(v), Byte: len(arg)}}
		var expr hcl.Expression = hcl.StaticExpr(cliValue(v), rng)
		if t := strings.TrimSpace(v); t != "" && strings.ContainsAny(t[:1], "[{\"") {
			e, d := hclsyntax.ParseExpression([]byte(arg[len(p)+1:]), name, start)
			if d.HasErrors() {
				diags = append(diags, d...)
				continue
			}
			if len(e.Variables()) > 0 {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError, Summary: "Invalid --set value",
					Detail:  "A --set value is a constant: it cannot refer to variables.",
					Subject: e.Range().Ptr(),
				})
				continue
			}
			expr = e
		}
		ov.sets = append(ov.sets, &setting{arg: arg, path: path, value: expr, rng: rng})
	}
	if opts.Router != "" {
		name := routerFile(opts.Router)
		files[name] = &hcl.File{Bytes: []byte(opts.Router)}
		ov.router = opts.Router
		ov.routerRng = hcl.Range{Filename: name, Start: hcl.Pos{Line: 1, Column: 1}, End: hcl.Pos{Line: 1, Column: 1 + len(opts.Router), Byte: len(opts.Router)}}
		if lookupPolicy(opts.Router) == nil && lookupLocal(opts.Router) == nil && lookupGlobal(opts.Router) == nil {
			all := append(append(Policies(), LocalPolicies()...), GlobalPolicies()...)
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: "Unknown router policy",
				Detail: fmt.Sprintf("There is no routing policy named %q.%s The policies are %s.",
					opts.Router, didYouMean(opts.Router, all), quotedList(uniqueSorted(all))),
				Subject: ov.routerRng.Ptr(),
			})
		}
	}
	return ov, diags
}

func uniqueSorted(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// wrap returns body with the overrides applied (body itself when there
// are none).
func (ov *overrides) wrap(body hcl.Body) hcl.Body {
	if len(ov.sets) == 0 && ov.router == "" {
		return body
	}
	return &setBody{inner: body, paths: [][]string{nil}, ov: ov}
}

// setBody is a body with the overrides applied. paths are the ways to
// name it: block types and labels from the top, where the label of a block
// a scenario has one of (router, workload, generator, ...) may be left
// out (router.tau_append or router.kvc.tau_append).
type setBody struct {
	inner hcl.Body
	paths [][]string
	ov    *overrides
}

func (b *setBody) Content(s *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	c, d := b.inner.Content(b.ov.relax(b.paths, s))
	return b.ov.apply(b.paths, s, c), d
}

func (b *setBody) PartialContent(s *hcl.BodySchema) (*hcl.BodyContent, hcl.Body, hcl.Diagnostics) {
	c, rest, d := b.inner.PartialContent(b.ov.relax(b.paths, s))
	return b.ov.apply(b.paths, s, c), &setBody{inner: rest, paths: b.paths, ov: b.ov}, d
}

func (b *setBody) JustAttributes() (hcl.Attributes, hcl.Diagnostics) { return b.inner.JustAttributes() }

func (b *setBody) MissingItemRange() hcl.Range { return b.inner.MissingItemRange() }

// matchesAny reports whether a setting's path is one of paths + attr.
func (s *setting) matchesAny(paths [][]string, attr string) bool {
	for _, p := range paths {
		if s.matches(p, attr) {
			return true
		}
	}
	return false
}

// matches reports whether a setting's path is path + attr.
func (s *setting) matches(path []string, attr string) bool {
	if len(s.path) != len(path)+1 || s.path[len(path)] != attr {
		return false
	}
	for i, p := range path {
		if s.path[i] != p && s.path[i] != "*" {
			return false
		}
	}
	return true
}

// relax makes the attributes a --set provides optional in s, so that a
// required attribute may come from the command line alone.
func (ov *overrides) relax(paths [][]string, s *hcl.BodySchema) *hcl.BodySchema {
	var out *hcl.BodySchema
	for i, a := range s.Attributes {
		if !a.Required {
			continue
		}
		for _, st := range ov.sets {
			if st.matchesAny(paths, a.Name) {
				if out == nil {
					cp := *s
					cp.Attributes = append([]hcl.AttributeSchema(nil), s.Attributes...)
					out = &cp
				}
				out.Attributes[i].Required = false
			}
		}
	}
	if out == nil {
		return s
	}
	return out
}

// apply injects the settings for path into c and wraps c's blocks.
func (ov *overrides) apply(paths [][]string, s *hcl.BodySchema, c *hcl.BodyContent) *hcl.BodyContent {
	if c == nil {
		return nil
	}
	for _, a := range s.Attributes {
		for _, p := range paths {
			ov.seen[strings.Join(append(append([]string(nil), p...), a.Name), ".")] = true
		}
		for _, st := range ov.sets {
			if !st.matchesAny(paths, a.Name) {
				continue
			}
			st.applied = true
			if c.Attributes == nil {
				c.Attributes = hcl.Attributes{}
			}
			c.Attributes[a.Name] = &hcl.Attribute{Name: a.Name, Expr: st.value, Range: st.rng, NameRange: st.rng}
		}
	}
	top := len(paths) == 1 && len(paths[0]) == 0
	if top && ov.router != "" {
		ov.swapRouter(c)
	}
	for i, blk := range c.Blocks {
		var child [][]string
		for _, p := range paths {
			if singletonBlocks[blk.Type] && len(blk.Labels) > 0 {
				child = append(child, append(append([]string(nil), p...), blk.Type))
			}
			child = append(child, append(append(append([]string(nil), p...), blk.Type), blk.Labels...))
		}
		nb := *blk
		nb.Body = &setBody{inner: blk.Body, paths: child, ov: ov}
		c.Blocks[i] = &nb
	}
	return c
}

// swapRouter gives the routing block --router replaces the new policy
// and an empty body (the policy's defaults). A scenario with a router
// block swaps it; one with bucket routing swaps its local_router (or
// global_router, for a global policy).
func (ov *overrides) swapRouter(c *hcl.BodyContent) {
	has := map[string]bool{}
	for _, b := range c.Blocks {
		has[b.Type] = true
	}
	var target string
	switch {
	case has["router"] && lookupPolicy(ov.router) != nil:
		target = "router"
	case has["router"]:
		return // a bucket-only policy: see unused
	case lookupGlobal(ov.router) != nil:
		target = "global_router"
	case lookupLocal(ov.router) != nil:
		target = "local_router"
	}
	for i, b := range c.Blocks {
		if b.Type != target {
			continue
		}
		ov.swapped = true
		if len(b.Labels) == 1 && b.Labels[0] == ov.router {
			// The scenario already runs this policy: keep its settings.
			ov.swap = &RouterSwap{Block: target, From: ov.router, To: ov.router, Kept: true}
			continue
		}
		sw := &RouterSwap{Block: target, To: ov.router}
		if len(b.Labels) > 0 {
			sw.From = b.Labels[0]
		}
		if attrs, diags := b.Body.JustAttributes(); !diags.HasErrors() {
			for name := range attrs {
				sw.Dropped = append(sw.Dropped, name)
			}
			sort.Strings(sw.Dropped)
		}
		ov.swap = sw
		nb := *b
		nb.Labels = []string{ov.router}
		nb.LabelRanges = []hcl.Range{ov.routerRng}
		nb.Body = hcl.EmptyBody()
		c.Blocks[i] = &nb
	}
}

// RouterSwap is what --router (Options.Router) did to a scenario's
// routing block.
type RouterSwap struct {
	Block    string // "router", "global_router" or "local_router"
	From, To string // the scenario's policy and --router's
	// Kept: the scenario already ran To, and keeps its settings.
	Kept bool
	// Dropped are the attributes of the replaced block (sorted): the new
	// policy starts from its own defaults.
	Dropped []string
}

// String describes the swap for a run's log.
func (s *RouterSwap) String() string {
	if s.Kept {
		return fmt.Sprintf("--router %s: the scenario already routes with %s; its %s settings are kept", s.To, s.To, s.Block)
	}
	d := "it set none"
	if len(s.Dropped) > 0 {
		d = "dropped: " + strings.Join(s.Dropped, ", ")
	}
	return fmt.Sprintf("--router %s replaces the scenario's %s %q with %s's defaults (%s)", s.To, s.Block, s.From, s.To, d)
}

// unused reports the settings that matched no attribute and a --router
// that found no routing block to replace.
func (ov *overrides) unused() hcl.Diagnostics {
	var diags hcl.Diagnostics
	known := slices.Sorted(maps.Keys(ov.seen))
	for _, st := range ov.sets {
		if st.applied {
			continue
		}
		p := strings.Join(st.path, ".")
		pathRng := st.rng
		pathRng.Start = hcl.Pos{Line: 1, Column: 1}
		pathRng.End = hcl.Pos{Line: 1, Column: 1 + len(p), Byte: len(p)}
		hint := didYouMean(p, known)
		if attr := st.path[len(st.path)-1]; st.path[0] == "link" && ov.seen["mesh."+attr] {
			// The shipped bases link their workers with one mesh block.
			hint = fmt.Sprintf(" This scenario's links come from its mesh block: --set mesh.%s=... sets it on every link.", attr)
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: "Unknown --set path",
			Detail: fmt.Sprintf("%q names no attribute of this scenario.%s A path is block type, labels and attribute, e.g. router.tau_append, decode.d1.kv_budget_tokens or decode.*.gpu.",
				p, hint),
			Subject: pathRng.Ptr(),
		})
	}
	if ov.router != "" && !ov.swapped {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: "Cannot swap the routing policy",
			Detail: fmt.Sprintf("--router %s: this scenario has no routing block that policy can replace. A router block takes %s; bucket routing's global_router block takes %s and its local_router block %s.",
				ov.router, quotedOr(Policies()), quotedOr(GlobalPolicies()), quotedOr(LocalPolicies())),
			Subject: ov.routerRng.Ptr(),
		})
	}
	return diags
}

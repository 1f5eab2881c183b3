package experiment

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pdemu/pdemu/metrics"
)

// Attribution (issue 19): what each figure is made of, computed from the
// runs' per-request records (mode, kv_cause, prefilled tokens, P or D
// side, TTFT parts). The report states only these numbers.

// Attribution kinds a figure refers to (figDef.attribution).
const (
	attrPrefilled = "prefilled tokens by mode, cause and side"
	attrCauses    = "Seed/Reseed/Fallback requests by kv_cause"
	attrTail      = "TTFT tail (≥ p99) by mode and part"
	attrUncached  = "uncached tokens per request by mode"
	attrReseeds   = "reseeds by cause"
	attrV1Gap     = "v1 − v2 Direct-share gap: τ_append vs reset-on-success"
	attrDecode    = "decode tokens per request"
)

// tokCount is a number of requests and of tokens.
type tokCount struct {
	N      int
	Tokens int64
}

// attrStats are one run's breakdowns.
type attrStats struct {
	// prefill by "side|mode|cause": side P (prefill worker) or D
	// (decode/fused worker: Direct append-prefill, Fused prefill).
	prefill map[string]*tokCount
	// tail: the requests with TTFT ≥ the run's p99, by mode, and the mean
	// of each TTFT part over them.
	tailAt    float64 // ms
	tailModes map[string]int
	tailParts []float64 // ms, metrics.TTFTPartNames order
	tailN     int
	// uncached tokens by mode (for medians).
	uncached map[string][]float64
	// evicted: evictions.csv rows by cause.
	evicted map[string]*tokCount
}

// causeClass reduces a kv_cause to its class: first-turn, capacity,
// transfer-failed, worker-crashed, session-end, rejected:<reasons>,
// blacklisted, rerouted, never-resident; "" when none.
func causeClass(c string) string {
	switch {
	case c == "":
		return ""
	case strings.HasPrefix(c, "rejected:"):
		rs := strings.Split(strings.TrimPrefix(c, "rejected:"), "+")
		seen := map[string]bool{}
		var u []string
		for _, r := range rs {
			if !seen[r] {
				seen[r] = true
				u = append(u, r)
			}
		}
		sort.Strings(u)
		return "rejected:" + strings.Join(u, "+")
	}
	if i := strings.IndexByte(c, '@'); i >= 0 {
		return c[:i]
	}
	return c
}

func computeAttr(recs []metrics.Record, evs []metrics.EvictionRow, p99ms float64) attrStats {
	a := attrStats{prefill: map[string]*tokCount{}, tailAt: p99ms, tailModes: map[string]int{},
		tailParts: make([]float64, len(metrics.TTFTPartNames)), uncached: map[string][]float64{}, evicted: map[string]*tokCount{}}
	for _, e := range evs {
		t := a.evicted[e.Cause]
		if t == nil {
			t = &tokCount{}
			a.evicted[e.Cause] = t
		}
		t.N++
		t.Tokens += int64(e.Tokens)
	}
	for i := range recs {
		r := &recs[i]
		if r.Failed {
			continue
		}
		side := "D"
		if r.P != "" {
			side = "P"
		}
		cause := causeClass(r.KVCause)
		if r.Mode == "Direct" {
			cause = "append"
		}
		k := side + "|" + r.Mode + "|" + cause
		t := a.prefill[k]
		if t == nil {
			t = &tokCount{}
			a.prefill[k] = t
		}
		t.N++
		t.Tokens += int64(r.AppendTokens)
		a.uncached[r.Mode] = append(a.uncached[r.Mode], float64(r.AppendTokens))
		if r.HasParts && float64(r.TTFT)/1e6 >= p99ms {
			a.tailN++
			a.tailModes[r.Mode]++
			for j := range a.tailParts {
				a.tailParts[j] += float64(r.Parts.At(j)) / float64(time.Millisecond)
			}
		}
	}
	if a.tailN > 0 {
		for j := range a.tailParts {
			a.tailParts[j] /= float64(a.tailN)
		}
	}
	return a
}

// prefillTable is the prefilled-token breakdown of runs.
func prefillTable(runs ...*runOut) Table {
	t := Table{Header: []string{"run", "side", "mode", "cause", "requests", "prefilled tokens", "share of the run's"}}
	for _, o := range runs {
		if o == nil {
			continue
		}
		total := float64(o.st.sum.Prefilled)
		for _, k := range slices.Sorted(maps.Keys(o.st.attr.prefill)) {
			c := o.st.attr.prefill[k]
			parts := strings.SplitN(k, "|", 3)
			t.Rows = append(t.Rows, []string{o.def.name, parts[0], parts[1], parts[2], fmt.Sprint(c.N),
				fmt.Sprint(c.Tokens), pts(float64(c.Tokens) / max(total, 1))})
		}
	}
	return t
}

// tailTable is the TTFT tail by mode and part.
func tailTable(runs ...*runOut) Table {
	t := Table{Header: append([]string{"run", "p99 ms", "requests ≥ p99", "by mode"}, partHeaders()...)}
	for _, o := range runs {
		if o == nil {
			continue
		}
		a := o.st.attr
		var modes []string
		for _, m := range slices.Sorted(maps.Keys(a.tailModes)) {
			modes = append(modes, fmt.Sprintf("%s %d", m, a.tailModes[m]))
		}
		row := []string{o.def.name, f1(a.tailAt), fmt.Sprint(a.tailN), strings.Join(modes, ", ")}
		for _, p := range a.tailParts {
			row = append(row, f1(p))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func partHeaders() []string {
	h := make([]string, len(metrics.TTFTPartNames))
	for i, n := range metrics.TTFTPartNames {
		h[i] = "mean " + n + " ms"
	}
	return h
}

// uncachedTable is the uncached tokens per request by mode.
func uncachedTable(runs ...*runOut) Table {
	t := Table{Header: []string{"run", "mode", "requests", "uncached p50", "p90", "mean"}}
	for _, o := range runs {
		if o == nil {
			continue
		}
		for _, m := range slices.Sorted(maps.Keys(o.st.attr.uncached)) {
			xs := o.st.attr.uncached[m]
			t.Rows = append(t.Rows, []string{o.def.name, m, fmt.Sprint(len(xs)), f0(quantile(append([]float64(nil), xs...), 0.5)),
				f0(quantile(append([]float64(nil), xs...), 0.9)), f0(mean(xs))})
		}
	}
	return t
}

// v1Gap is the v1 − v2 decomposition at one content: the Direct shares of
// v2 and v1 at τ_append 2048 and 8192.
type v1Gap struct {
	content                        string
	v2at8k, v2at2k, v1at2k, v1at8k *runOut
}

func (g v1Gap) ok() bool {
	return g.v2at8k != nil && g.v2at2k != nil && g.v1at2k != nil && g.v1at8k != nil
}

func ds(o *runOut) float64 { return o.st.sum.DirectShare }

// v1GapTable decomposes the paper pairing's gap (v2 at 8192 − v1 at 2048)
// into the τ_append effect (v2 at 8192 − v2 at 2048) and the effect of
// reset-on-success with §3.4's degenerate fallback at equal τ_append
// (v2 − v1 at 2048; and at 8192 for comparison).
func v1GapTable(gs ...v1Gap) Table {
	t := Table{Header: []string{"content", "v2 τ8192", "v2 τ2048", "v1 τ2048", "v1 τ8192", "paper pairing gap (v2 τ8192 − v1 τ2048)", "τ_append part (v2 τ8192 − v2 τ2048)", "reset-on-success part at τ2048 (v2 − v1)", "v2 − v1 at τ8192"}}
	p := func(x float64) string { return fmt.Sprintf("%.1f points", 100*x) }
	for _, g := range gs {
		if !g.ok() {
			continue
		}
		t.Rows = append(t.Rows, []string{g.content, pts(ds(g.v2at8k)), pts(ds(g.v2at2k)), pts(ds(g.v1at2k)), pts(ds(g.v1at8k)),
			p(ds(g.v2at8k) - ds(g.v1at2k)), p(ds(g.v2at8k) - ds(g.v2at2k)), p(ds(g.v2at2k) - ds(g.v1at2k)), p(ds(g.v2at8k) - ds(g.v1at8k))})
	}
	return t
}

// attributionText is the one-line computed attribution of kind for the
// figure's runs (seed s0's).
func attributionText(kind string, k *seedRuns, gaps []v1Gap) string {
	switch kind {
	case attrPrefilled:
		return prefillLine(k.kvc) + " " + prefillLine(k.dp)
	case attrCauses:
		return causesLine(k.kvc)
	case attrTail:
		return tailLine(k.kvc) + " " + tailLine(k.dp)
	case attrUncached:
		return uncachedLine(k.kvc) + " " + uncachedLine(k.dp)
	case attrReseeds:
		return reseedLine(k.kvc)
	case attrDecode:
		o := k.kvc
		return fmt.Sprintf("%s decoded %.2f M tokens over %d requests (mean %.0f per request).", o.def.name,
			float64(o.st.sum.Decoded)/1e6, o.st.sum.Requests, float64(o.st.sum.Decoded)/float64(max(o.st.sum.Requests, 1)))
	case attrV1Gap:
		var out []string
		for _, g := range gaps {
			if g.ok() {
				out = append(out, fmt.Sprintf("%s content: v2 − v1 = %.1f points at the paper's pairing, of which τ_append (v2 at 8192 − v2 at 2048) %.1f and reset-on-success with the degenerate fallback (v2 − v1 at 2048) %.1f; at τ_append 8192 v2 − v1 = %.1f.",
					g.content, 100*(ds(g.v2at8k)-ds(g.v1at2k)), 100*(ds(g.v2at8k)-ds(g.v2at2k)), 100*(ds(g.v2at2k)-ds(g.v1at2k)), 100*(ds(g.v2at8k)-ds(g.v1at8k))))
			}
		}
		return strings.Join(out, " ")
	}
	return ""
}

// sideMode sums a run's prefill breakdown by side and mode.
func sideMode(o *runOut, side, mode string) tokCount {
	var t tokCount
	for k, c := range o.st.attr.prefill {
		p := strings.SplitN(k, "|", 3)
		if (side == "" || p[0] == side) && (mode == "" || p[1] == mode) {
			t.N += c.N
			t.Tokens += c.Tokens
		}
	}
	return t
}

func prefillLine(o *runOut) string {
	if o == nil {
		return ""
	}
	P, D := sideMode(o, "P", ""), sideMode(o, "D", "")
	s := fmt.Sprintf("%s prefilled %.2f M tokens: %.2f M on P (%d requests), %.2f M on the decode/fused side (%d)", o.def.name,
		float64(o.st.sum.Prefilled)/1e6, float64(P.Tokens)/1e6, P.N, float64(D.Tokens)/1e6, D.N)
	var parts []string
	for _, m := range []string{"Seed", "Reseed", "Fallback"} {
		if c := sideMode(o, "P", m); c.N > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f M in %d", m, float64(c.Tokens)/1e6, c.N))
		}
	}
	if len(parts) > 0 {
		s += "; on P: " + strings.Join(parts, ", ")
	}
	var ev []string
	for _, c := range slices.Sorted(maps.Keys(o.st.attr.evicted)) {
		e := o.st.attr.evicted[c]
		ev = append(ev, fmt.Sprintf("%s %d (%.2f M tokens)", c, e.N, float64(e.Tokens)/1e6))
	}
	if len(ev) > 0 {
		s += "; evictions.csv: " + strings.Join(ev, ", ")
	}
	return s + "."
}

func causesLine(o *runOut) string {
	if o == nil {
		return ""
	}
	type kc struct {
		k string
		c *tokCount
	}
	var xs []kc
	for k, c := range o.st.attr.prefill {
		if p := strings.SplitN(k, "|", 3); p[1] == "Seed" || p[1] == "Reseed" || p[1] == "Fallback" {
			xs = append(xs, kc{p[1] + " " + p[2], c})
		}
	}
	sort.Slice(xs, func(i, j int) bool {
		if xs[i].c.N != xs[j].c.N {
			return xs[i].c.N > xs[j].c.N
		}
		return xs[i].k < xs[j].k
	})
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%s: %d (%.0f K tokens)", x.k, x.c.N, float64(x.c.Tokens)/1e3))
	}
	return fmt.Sprintf("%s requests through P by kv_cause: %s.", o.def.name, strings.Join(parts, "; "))
}

func tailLine(o *runOut) string {
	if o == nil {
		return ""
	}
	a := o.st.attr
	if a.tailN == 0 {
		return o.def.name + ": no tail."
	}
	var modes []string
	for _, m := range slices.Sorted(maps.Keys(a.tailModes)) {
		modes = append(modes, fmt.Sprintf("%s %d", m, a.tailModes[m]))
	}
	type pv struct {
		n string
		v float64
	}
	var ps []pv
	tot := 0.0
	for i, v := range a.tailParts {
		ps = append(ps, pv{metrics.TTFTPartNames[i], v})
		tot += v
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].v > ps[j].v })
	var top []string
	for _, p := range ps[:min(3, len(ps))] {
		if p.v > 0 {
			top = append(top, fmt.Sprintf("%s %.0f ms (%.0f %%)", p.n, p.v, 100*p.v/max(tot, 1e-9)))
		}
	}
	return fmt.Sprintf("%s: %d requests at TTFT ≥ p99 %.0f ms (%s); their mean TTFT %.0f ms is mostly %s.", o.def.name, a.tailN, a.tailAt,
		strings.Join(modes, ", "), tot, strings.Join(top, ", "))
}

func uncachedLine(o *runOut) string {
	if o == nil {
		return ""
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(o.st.attr.uncached)) {
		xs := o.st.attr.uncached[m]
		parts = append(parts, fmt.Sprintf("%s %d requests, median %.0f", m, len(xs), quantile(append([]float64(nil), xs...), 0.5)))
	}
	return fmt.Sprintf("%s uncached tokens per request: %s.", o.def.name, strings.Join(parts, "; "))
}

func reseedLine(o *runOut) string {
	if o == nil {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(o.st.attr.prefill)) {
		p := strings.SplitN(k, "|", 3)
		if p[1] == "Reseed" {
			c := o.st.attr.prefill[k]
			parts = append(parts, fmt.Sprintf("%s %d (mean %.0f tokens re-prefilled)", p[2], c.N, float64(c.Tokens)/float64(max(c.N, 1))))
		}
	}
	return fmt.Sprintf("%s reseeds by cause: %s; median re-prefill %.2f s and transfer %.2f s (cost models, unqueued).", o.def.name,
		strings.Join(parts, ", "), med(o.st.reseedPrefill), med(o.st.reseedXfer))
}

// titled puts a title in a table's first header cell.
func titled(title string, t Table) Table {
	t.Title = title
	return t
}

// windowTable is the per-window router counters of runs side by side.
func windowTable(title string, runs ...*runOut) Table {
	t := Table{Header: []string{title}}
	var ws [][]windowStats
	n := 0
	for _, o := range runs {
		if o == nil {
			return Table{}
		}
		t.Header = append(t.Header, o.def.name+" Direct", "migr", "fallb", "rej")
		ws = append(ws, o.st.windows)
		n = max(n, len(o.st.windows))
	}
	for w := range n {
		row := []string{fmt.Sprint(w)}
		for _, x := range ws {
			if w >= len(x) || x[w].Requests == 0 {
				row = append(row, "—", "", "", "")
				continue
			}
			s := x[w]
			row = append(row, pts(float64(s.Direct)/float64(s.Requests)), fmt.Sprint(s.Migrations), fmt.Sprint(s.Fallbacks), fmt.Sprint(s.Rejections))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// windowsEqualTau is v1 against v2 at equal τ_append (2048 and 8192), on
// the paper's content and (full runs) the v1-stress content, window by
// window.
func (r *Report) windowsEqualTau(v2at2k, v1at2k, v2at8k, v1at8k, sv2at2k, sv1at2k, sv2at8k, sv1at8k *runOut) {
	sec := Section{Title: "v1 vs v2 at equal τ_append (router counters per 30-min window)", Text: []string{
		"The paper compares v2 at τ_append 8192 with v1 at 2048; these runs hold τ_append equal, so the difference is reset-on-success with §3.4's degenerate fallback alone (all_blacklisted = degenerate_fallback for v1).",
	}}
	line := func(content string, a2, b2, a8, b8 *runOut) {
		if a2 == nil || b2 == nil || a8 == nil || b8 == nil {
			return
		}
		sec.Text = append(sec.Text, fmt.Sprintf("%s content: at τ_append 2048 v2 %s Direct (%d Fallbacks, %d migrations), v1 %s (%d, %d); at 8192 v2 %s (%d, %d), v1 %s (%d, %d).",
			content, pts(ds(a2)), a2.st.sum.Fallbacks, a2.st.sum.Migrations, pts(ds(b2)), b2.st.sum.Fallbacks, b2.st.sum.Migrations,
			pts(ds(a8)), a8.st.sum.Fallbacks, a8.st.sum.Migrations, pts(ds(b8)), b8.st.sum.Fallbacks, b8.st.sum.Migrations))
	}
	line("Paper", v2at2k, v1at2k, v2at8k, v1at8k)
	line("v1-stress", sv2at2k, sv1at2k, sv2at8k, sv1at8k)
	for _, t := range []Table{
		windowTable("τ2048, paper", v2at2k, v1at2k),
		windowTable("τ8192, paper", v2at8k, v1at8k),
		windowTable("τ2048, v1-stress", sv2at2k, sv1at2k),
		windowTable("τ8192, v1-stress", sv2at8k, sv1at8k),
	} {
		if len(t.Header) > 1 {
			sec.Tables = append(sec.Tables, t)
		}
	}
	r.Sections = append(r.Sections, sec)
}

package report

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Page is a built report: the figures in the order shown and the HTML.
type Page struct {
	HTML    []byte
	Figures []*Figure
}

type runSection struct {
	Name    string
	Anchor  string
	Dir     string
	Status  string
	Detail  string
	OK      bool
	Params  [][2]string
	Results [][2]string
	// Notes say which of the run's plots are absent and why.
	Notes []string
	// FaultHeader and Faults are the run's faults.csv (nil without faults).
	FaultHeader []string
	Faults      [][]string
	Figures     []*Figure
}

// groupView is one workload's part of the page.
type groupView struct {
	Label        string
	ID           string
	BaselineNote string
	Runs         int
	Rows         []tableRow
	Figures      []*Figure
}

// Options are what a report is built with.
type Options struct {
	Title string
	// BaseDir is the directory the HTML file goes to: run directories
	// below it are shown relative to it, so the page does not depend on
	// where it was built.
	BaseDir string
	// Baseline names the run the others are compared with ("" the first
	// run with status ok). On each other workload the run with the same
	// configuration is that workload's baseline. A run that is not ok is
	// refused.
	Baseline string
	// Failed are runs that ended without a summary.json (their error
	// instead): listed loudly, never as figures.
	Failed []FailedRun
}

// FailedRun is a run of the study that wrote no results.
type FailedRun struct {
	Name  string
	Error string
}

// Build renders the report of runs (at least one) with the default
// baseline.
func Build(title, baseDir string, runs []*Run) (*Page, error) {
	return BuildWith(Options{Title: title, BaseDir: baseDir}, runs)
}

// BuildWith renders the report of runs (at least one): the table (runs
// grouped by workload, rounded, with units and deltas against each
// workload's baseline, not-ok runs marked), the mode mix, per workload
// its CDFs, Direct share and TTFT parts, and per run its parameters,
// results and time series.
func BuildWith(o Options, runs []*Run) (*Page, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("report: no runs with results")
	}
	rows, err := MakeRows(runs)
	if err != nil {
		return nil, err
	}
	groups, err := groupWorkloads(runs, rows, o.Baseline)
	if err != nil {
		return nil, err
	}
	cols := tableColumns(rows)
	// The mode mix and the runs' sections follow the table: by workload.
	var ordered []*Run
	var orderedRows []Row
	for _, g := range groups {
		ordered = append(ordered, g.Runs...)
		orderedRows = append(orderedRows, g.Rows...)
	}
	mix, err := modeMixFigure(ordered)
	if err != nil {
		return nil, err
	}
	all := []*Figure{mix}
	var views []groupView
	ids := map[string]bool{}
	for _, g := range groups {
		prefix, suffix := "", ""
		if len(groups) > 1 {
			base := SanitizeName(strings.TrimPrefix(g.Label, "trace "))
			prefix = base
			for n := 2; ids[prefix]; n++ {
				prefix = base + "-" + strconv.Itoa(n)
			}
			ids[prefix] = true
			prefix += "__"
			suffix = ": " + g.Label
		}
		view := groupView{Label: g.Label, ID: "workload-" + strings.TrimSuffix(prefix, "__"), BaselineNote: g.BaselineNote,
			Runs: len(g.Runs), Rows: makeTableRows(g, cols)}
		if prefix == "" {
			view.ID = "workload"
		}
		legend := shortNames(g.Runs)
		var base *Run
		if g.Baseline >= 0 {
			base = legend[g.Baseline]
		}
		for _, f := range []func() (*Figure, error){
			func() (*Figure, error) {
				return cdfFigureOf(legend, base, "ttft_ms", prefix+"ttft_cdf", "TTFT CDF"+suffix)
			},
			func() (*Figure, error) {
				return cdfFigureOf(legend, base, "e2e_ms", prefix+"e2e_cdf", "E2E latency CDF"+suffix)
			},
			func() (*Figure, error) { return directShareFigureOf(legend, prefix+"direct_share", suffix) },
		} {
			fig, err := f()
			if err != nil {
				return nil, err
			}
			if fig != nil {
				view.Figures = append(view.Figures, fig)
			}
		}
		parts, err := ttftPartsFiguresOf(legend, prefix, suffix)
		if err != nil {
			return nil, err
		}
		view.Figures = append(view.Figures, parts...)
		all = append(all, view.Figures...)
		views = append(views, view)
	}

	var sections []runSection
	rows = orderedRows
	for i, r := range ordered {
		id := SanitizeName(r.Name)
		dir := r.Dir
		if rel, err := filepath.Rel(o.BaseDir, r.Dir); err == nil && !strings.HasPrefix(rel, "..") {
			dir = filepath.ToSlash(rel)
		}
		sec := runSection{Name: r.Name, Anchor: "run-" + r.Name, Dir: dir, Status: rows[i].Status, Detail: rows[i].StatusDetail,
			OK: rows[i].Status == StatusOK, Params: paramRows(r), Results: resultRows(r)}
		sec.FaultHeader, sec.Faults = faultTable(r)
		for _, m := range r.Missing {
			switch m {
			case "per_request.csv":
				sec.Notes = append(sec.Notes, "no per_request.csv in the directory: this run is left out of the CDFs, the Direct share and the TTFT parts, and its token and KV-moved figures are unknown")
			case "instances.csv":
				sec.Notes = append(sec.Notes, "no instances.csv in the directory: no KV occupancy or queue plots")
			}
		}
		switch {
		case r.Links == nil:
			sec.Notes = append(sec.Notes, "no links.csv in the directory: no link plot")
		case len(r.Links.Rows) == 0:
			sec.Notes = append(sec.Notes, "no KV link carried a transfer (links.csv has no rows): no link plot")
		}
		if r.RouterWindows == nil {
			sec.Notes = append(sec.Notes, "no router_windows.csv in the directory: no router counters plot")
		}
		for _, f := range []func() (*Figure, error){
			func() (*Figure, error) {
				if pool, cache := splitKinds(r.Instances); cache != nil {
					return seriesFigure(r, pool, "instances.csv", "worker", "kv_tokens", id+"__kv", "KV pool use per decode worker: "+r.Name, "KV tokens",
						"instances.csv kv_tokens of the decode and fused workers: their KV pool use (the prefill workers' prefix caches are the next plot: on one axis their larger range would flatten these lines).")
				}
				return seriesFigure(r, r.Instances, "instances.csv", "worker", "kv_tokens", id+"__kv", "KV occupancy per worker: "+r.Name, "KV tokens",
					"instances.csv kv_tokens: a decode or fused worker's KV pool use, a prefill worker's prefix-cache use.")
			},
			func() (*Figure, error) {
				_, cache := splitKinds(r.Instances)
				if cache == nil {
					return nil, nil
				}
				return seriesFigure(r, cache, "instances.csv", "worker", "kv_tokens", id+"__kv_prefill", "Prefix cache per prefill worker: "+r.Name, "cached tokens",
					"instances.csv kv_tokens of the prefill workers: their prefix-cache use.")
			},
			func() (*Figure, error) {
				return seriesFigure(r, r.Instances, "instances.csv", "worker", "queue", id+"__queue", "Queue length per worker: "+r.Name, "queued requests",
					"instances.csv queue, sampled every sample_interval.")
			},
			func() (*Figure, error) { return linkFigure(r, id+"__links") },
			func() (*Figure, error) { return routerWindowsFigure(r, id+"__router") },
		} {
			fig, err := f()
			if err != nil {
				return nil, err
			}
			if fig != nil {
				sec.Figures = append(sec.Figures, fig)
				all = append(all, fig)
			}
		}
		sections = append(sections, sec)
	}

	var missing []string
	for _, r := range ordered {
		if len(r.Missing) > 0 {
			missing = append(missing, r.Name+" (no "+strings.Join(r.Missing, ", no ")+")")
		}
	}
	var b bytes.Buffer
	err = pageTmpl().Execute(&b, map[string]any{
		"Title":    o.Title,
		"Status":   statusCounts(rows),
		"Overload": overloadNote(rows),
		"Failed":   o.Failed,
		"Missing":  missing,
		"Columns":  cols,
		"NCols":    len(cols) + 2,
		"Groups":   views,
		"ModeMix":  mix,
		"Sections": sections,
		"Faults":   anyFaults(rows),
	})
	if err != nil {
		return nil, err
	}
	return &Page{HTML: b.Bytes(), Figures: all}, nil
}

// splitKinds splits instances.csv into the decode/fused workers' rows
// (KV pools) and the prefill workers' (prefix caches) when it has both;
// cache is nil otherwise.
func splitKinds(t *Table) (pool, cache *Table) {
	if t == nil || !t.Has("kind") {
		return t, nil
	}
	pool = &Table{Header: t.Header, idx: t.idx}
	cache = &Table{Header: t.Header, idx: t.idx}
	for i, row := range t.Rows {
		if t.Str(i, "kind") == "prefill" {
			cache.Rows = append(cache.Rows, row)
		} else {
			pool.Rows = append(pool.Rows, row)
		}
	}
	if len(cache.Rows) == 0 || len(pool.Rows) == 0 {
		return t, nil
	}
	return pool, cache
}

// shortNames are copies of runs named without the "__"-separated parts
// of their names that every run shares (typically the workload's
// "trace=..." part, which the panel's title already says), for the
// legends of a workload's panels. Names stay distinct and non-empty, or
// the runs are returned as they are.
func shortNames(runs []*Run) []*Run {
	if len(runs) < 2 {
		return runs
	}
	split := make([][]string, len(runs))
	count := map[string]int{}
	for i, r := range runs {
		split[i] = strings.Split(r.Name, "__")
		seen := map[string]bool{}
		for _, p := range split[i] {
			if !seen[p] {
				count[p]++
				seen[p] = true
			}
		}
	}
	out := make([]*Run, len(runs))
	names := map[string]bool{}
	for i, r := range runs {
		var keep []string
		for _, p := range split[i] {
			if count[p] < len(runs) {
				keep = append(keep, p)
			}
		}
		n := strings.Join(keep, "__")
		if n == "" || names[n] {
			return runs
		}
		names[n] = true
		c := *r
		c.Name = n
		out[i] = &c
	}
	return out
}

// Write writes the page as file and each figure as an SVG file in
// plotsDir (created if needed).
func (p *Page) Write(file, plotsDir string) error {
	if err := os.MkdirAll(plotsDir, 0o755); err != nil {
		return err
	}
	for _, f := range p.Figures {
		if err := os.WriteFile(filepath.Join(plotsDir, f.ID+".svg"), f.SVG, 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, p.HTML, 0o644)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._=+-]+`)

// SanitizeName makes s usable as a file name on every common file system:
// runs of other characters than letters, digits and ._=+- become "_".
func SanitizeName(s string) string {
	s = unsafeChars.ReplaceAllString(s, "_")
	s = strings.Trim(s, ".")
	if s == "" {
		return "_"
	}
	return s
}

// svg strips the XML declaration so the SVG can be inlined in HTML.
func svg(b []byte) template.HTML {
	s := string(b)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return template.HTML(s) // gonum/plot output: generated, not user input
}

// pageTmpl is parsed on first use, not at package init: every pdemu
// process links this package, and parsing the page at init was 3.4M
// instructions (6 % of a one-request run) in processes that write no
// report.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{"svg": svg}).Parse(pageSource))
})

const pageSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1360px; }
h2 { margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 12px; margin-bottom: 1em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; vertical-align: top; }
th { background: #eee; }
td.l, th.l { text-align: left; }
table.cmp { width: 100%; table-layout: auto; }
table.cmp th { position: sticky; top: 0; }
table.cmp td.run { text-align: left; max-width: 20em; word-break: break-word; }
table.cmp tr.group td { background: #f4f4f8; text-align: left; font-weight: bold; }
table.cmp tr.group span { font-weight: normal; color: #555; }
table.cmp tr.notok td { background: #fdecec; color: #777; }
table.cmp tr.base td { background: #eef5ee; }
.v { white-space: nowrap; }
.d { display: block; font-size: 11px; color: #777; white-space: nowrap; }
.better { color: #1a7f37; }
.worse { color: #c62828; }
.st { font-weight: bold; white-space: nowrap; }
.st-ok { color: #1a7f37; }
.st-bad { color: #c62828; }
.over { display: block; font-size: 11px; font-weight: bold; color: #b35c00; white-space: nowrap; }
.warn { border: 2px solid #c62828; background: #fdecec; padding: .5em 1em; margin: 1em 0; }
.note { border: 1px solid #b68b00; background: #fff8e1; padding: .5em 1em; margin: 1em 0; font-size: 13px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(640px, 1fr)); gap: .5em 1.5em; }
figure { margin: .5em 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 12px; color: #555; }
.run { border-top: 2px solid #888; margin-top: 2em; padding-top: .5em; }
.run.notok h3 { color: #c62828; }
.side { display: flex; gap: 2em; flex-wrap: wrap; align-items: flex-start; }
.side td.l { max-width: 40em; }
.small { font-size: 12px; color: #555; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="small"><a href="#table">Comparison</a> · <a href="#mode-mix">Mode mix</a>{{range .Groups}} · <a href="#{{.ID}}">{{.Label}}</a>{{end}} · <a href="#runs">Runs</a></p>
{{if .Status}}<div class="warn"><b>Not every run is a clean result.</b> {{.Status}}</div>
{{end}}{{if .Failed}}<div class="warn"><b>{{len .Failed}} run{{if ne (len .Failed) 1}}s{{end}} of this study wrote no results</b> and {{if ne (len .Failed) 1}}are{{else}}is{{end}} in no table or plot below:<ul>{{range .Failed}}<li>{{.Name}}: {{.Error}}</li>{{end}}</ul></div>
{{end}}{{if .Overload}}<div class="warn"><b>Overload.</b> {{.Overload}}</div>
{{end}}{{if .Missing}}<div class="note">Runs kept with fewer outputs: {{range $i, $m := .Missing}}{{if $i}}; {{end}}{{$m}}{{end}}. Their rows come from summary.json; the figures the absent files would give are shown as – and the plots they would feed leave them out.</div>
{{end}}<h2 id="table">Comparison</h2>
<table class="cmp">
<tr><th class="l">run</th><th class="l">status</th>{{range .Columns}}<th>{{.Head}}{{if .Unit}}<br><span class="small">{{.Unit}}</span>{{end}}</th>{{end}}</tr>
{{range .Groups}}<tr class="group"><td colspan="{{$.NCols}}">{{.Label}} <span>· {{.Runs}} run{{if ne .Runs 1}}s{{end}} · {{.BaselineNote}}</span></td></tr>
{{range .Rows}}<tr class="{{if not .OK}}notok{{else if .Baseline}}base{{end}}"><td class="run"><a href="#{{.Anchor}}">{{range .Name}}{{.}}<wbr>{{end}}</a></td><td class="l"><span class="st {{if .OK}}st-ok{{else}}st-bad{{end}}"{{if .Detail}} title="{{.Detail}}"{{end}}>{{.Status}}</span>{{if not .OK}}<span class="d">{{.Detail}}</span>{{end}}{{if .Overloaded}}<span class="over" title="{{.Verdict}}">overloaded</span>{{end}}</td>
{{range $c := .Cells}}<td{{if $c.Title}} title="{{$c.Title}}"{{end}}><span class="v">{{$c.Value}}</span>{{if $c.Delta}}<span class="d {{$c.Class}}">{{$c.Delta}}</span>{{end}}{{if $c.Note}}<span class="d worse">{{$c.Note}}</span>{{end}}</td>{{end}}</tr>
{{end}}{{end}}</table>
<p class="small">Runs are grouped by workload; each group is compared with its baseline (green: better, red: worse; per cent, × for 2 times and more, ÷ for a tenth and less, or percentage points (pp) for shares; ±0 below 0.5 %). Requests columns: failed share of all requests, Direct share of all requests; latencies over completed requests; prefilled tokens are the tokens actually prefilled (append_tokens); KV moved is the KV transferred between workers; imbalance is the busiest decode/fused worker's share of requests over the mean share (1× = even). Exact figures: compare.csv and compare.json.</p>
<h2 id="mode-mix">Mode mix</h2>
<figure id="{{.ModeMix.ID}}">{{svg .ModeMix.SVG}}<figcaption>{{.ModeMix.Caption}}</figcaption></figure>
{{range .Groups}}<h2 id="{{.ID}}">Workload: {{.Label}}</h2>
<p class="small">{{.Runs}} run{{if ne .Runs 1}}s{{end}}; {{.BaselineNote}}.</p>
{{if .Figures}}<div class="grid">{{range .Figures}}<figure id="{{.ID}}">{{svg .SVG}}<figcaption>{{.Title}}: {{.Caption}}</figcaption></figure>
{{end}}</div>
{{else}}<p class="small">No CDF, Direct share or TTFT-parts plots: no run of this workload has its per_request.csv (the table's figures come from summary.json).</p>
{{end}}{{end}}<h2 id="runs">Runs</h2>
{{range .Sections}}<section class="run{{if not .OK}} notok{{end}}" id="{{.Anchor}}">
<h3>{{.Name}}{{if not .OK}} — {{.Status}}{{end}}</h3>
<div class="side">
<table><tr><th class="l" colspan="2">parameters</th></tr>{{range .Params}}<tr><td class="l">{{index . 0}}</td><td class="l">{{index . 1}}</td></tr>{{end}}</table>
<table><tr><th class="l" colspan="2">results</th></tr>{{range .Results}}<tr><td class="l">{{index . 0}}</td><td class="l">{{index . 1}}</td></tr>{{end}}</table>
</div>
<p class="small">directory: {{.Dir}}</p>
{{range .Notes}}<p class="small">{{.}}.</p>
{{end}}{{if .Faults}}<h4>Faults</h4>
<table>
<tr>{{range .FaultHeader}}<th>{{.}}</th>{{end}}</tr>
{{range .Faults}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p class="small">faults.csv: one row per fault (docs/OUTPUTS.md); times in ms of emulated time, "never" for an empty time; retried and failed are the requests the fault hit that were dispatched again or failed with the retry budget spent.</p>
{{end}}<div class="grid">{{range .Figures}}<figure id="{{.ID}}">{{svg .SVG}}<figcaption>{{.Title}}: {{.Caption}}</figcaption></figure>
{{end}}</div>
</section>
{{end}}
</body>
</html>
`

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
)

// Page is a built report: the figures in the order shown and the HTML.
type Page struct {
	HTML    []byte
	Figures []*Figure
}

type runSection struct {
	Name    string
	Dir     string
	Params  [][2]string
	Results [][2]string
	// FaultHeader and Faults are the run's faults.csv (nil without faults).
	FaultHeader []string
	Faults      [][]string
	Figures     []*Figure
}

// Build renders the report of runs (at least one). Run directories are
// shown relative to baseDir (the directory the HTML file goes to) when
// they are below it, so the page does not depend on where it was built.
func Build(title, baseDir string, runs []*Run) (*Page, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("report: no runs")
	}
	rows, err := MakeRows(runs)
	if err != nil {
		return nil, err
	}
	var global []*Figure
	for _, f := range []func() (*Figure, error){
		func() (*Figure, error) { return cdfFigure(runs, "ttft_ms", "ttft_cdf", "TTFT CDF") },
		func() (*Figure, error) { return cdfFigure(runs, "e2e_ms", "e2e_cdf", "E2E latency CDF") },
		func() (*Figure, error) { return modeMixFigure(runs) },
		func() (*Figure, error) { return directShareFigure(runs) },
	} {
		fig, err := f()
		if err != nil {
			return nil, err
		}
		global = append(global, fig)
	}
	parts, err := ttftPartsFigures(runs)
	if err != nil {
		return nil, err
	}
	global = append(global, parts...)

	var sections []runSection
	all := append([]*Figure(nil), global...)
	for _, r := range runs {
		id := SanitizeName(r.Name)
		dir := r.Dir
		if rel, err := filepath.Rel(baseDir, r.Dir); err == nil && !strings.HasPrefix(rel, "..") {
			dir = filepath.ToSlash(rel)
		}
		sec := runSection{Name: r.Name, Dir: dir, Params: paramRows(r), Results: resultRows(r)}
		sec.FaultHeader, sec.Faults = faultTable(r)
		for _, f := range []func() (*Figure, error){
			func() (*Figure, error) {
				return seriesFigure(r, r.Instances, "instances.csv", "worker", "kv_tokens", id+"__kv", "KV occupancy per worker: "+r.Name, "KV tokens",
					"instances.csv kv_tokens: a decode or fused worker's KV pool use, a prefill worker's prefix-cache use.")
			},
			func() (*Figure, error) {
				return seriesFigure(r, r.Instances, "instances.csv", "worker", "queue", id+"__queue", "Queue length per worker: "+r.Name, "queued requests",
					"instances.csv queue, sampled every sample_interval.")
			},
			func() (*Figure, error) {
				return seriesFigure(r, r.Links, "links.csv", "nic", "utilisation", id+"__links", "Link utilisation per NIC: "+r.Name, "utilisation",
					"links.csv utilisation of each NIC.")
			},
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

	var b bytes.Buffer
	err = pageTmpl.Execute(&b, map[string]any{
		"Title":    title,
		"Header":   csvHeader(anyFaults(rows)),
		"Rows":     tableCells(rows),
		"Global":   global,
		"Sections": sections,
	})
	if err != nil {
		return nil, err
	}
	return &Page{HTML: b.Bytes(), Figures: all}, nil
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

func paramRows(r *Run) [][2]string {
	p := r.Params
	if p == nil {
		return [][2]string{{"scenario", r.Summary.Scenario}, {"seed", strconv.FormatUint(r.Summary.Seed, 10)}, {"params.json", "absent (not a compare run)"}}
	}
	rows := [][2]string{{"scenario", p.Scenario}}
	if p.Router != "" {
		rows = append(rows, [2]string{"--router", p.Router})
	}
	for _, s := range p.Set {
		rows = append(rows, [2]string{"--set", s})
	}
	seed := "scenario's (" + strconv.FormatUint(r.Summary.Seed, 10) + ")"
	if p.Seed != nil {
		seed = strconv.FormatUint(*p.Seed, 10)
	}
	rows = append(rows, [2]string{"seed", seed})
	trace := "scenario's workload"
	if p.Trace != "" {
		trace = p.Trace
	}
	rows = append(rows, [2]string{"trace", trace})
	for _, k := range sortedKeys(p.Vars) {
		rows = append(rows, [2]string{"--var", k + "=" + p.Vars[k]})
	}
	if p.MaxRequests > 0 {
		rows = append(rows, [2]string{"--max-requests", strconv.Itoa(p.MaxRequests)})
	}
	if len(p.Varied) > 0 {
		rows = append(rows, [2]string{"varied", strings.Join(p.Varied, ", ")})
	}
	return rows
}

func resultRows(r *Run) [][2]string {
	s := r.Summary
	rows := [][2]string{
		{"policy", s.Policy},
		{"requests", fmt.Sprintf("%d (completed %d, failed %d)", s.Requests.Total, s.Requests.Completed, s.Requests.Failed)},
		{"TTFT ms", fmt.Sprintf("p50 %.1f  p90 %.1f  p99 %.1f", s.TTFT.P50, s.TTFT.P90, s.TTFT.P99)},
		{"E2E ms", fmt.Sprintf("p50 %.1f  p90 %.1f  p99 %.1f", s.E2E.P50, s.E2E.P90, s.E2E.P99)},
		{"emulated", fmt.Sprintf("%.1f s", s.EmulatedSeconds)},
		{"imbalance", fmt.Sprintf("%.3f", imbalanceOf(r))},
	}
	var modes []string
	for _, m := range Modes {
		if n := s.Modes[m]; n > 0 {
			modes = append(modes, fmt.Sprintf("%s %d", m, n))
		}
	}
	rows = append(rows, [2]string{"modes", strings.Join(modes, ", ")})
	if rt := s.Router; rt != nil {
		rows = append(rows, [2]string{"router", fmt.Sprintf("migrations %d, blacklists %d, fallbacks %d, rejections %d",
			rt.Migrations, rt.Blacklists, rt.Fallbacks, rt.Rejections)})
	}
	return rows
}

// tableCells are the cells of compare.csv's data lines, formatted as
// there.
func tableCells(rows []Row) [][]string {
	faults := anyFaults(rows)
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, csvRecord(r, faults))
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sortStrings(ks)
	return ks
}

// svg strips the XML declaration so the SVG can be inlined in HTML.
func svg(b []byte) template.HTML {
	s := string(b)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return template.HTML(s) // gonum/plot output: generated, not user input
}

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{"svg": svg}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 12px; margin-bottom: 1em; }
th, td { border: 1px solid #bbb; padding: 2px 6px; text-align: right; white-space: nowrap; }
th { background: #eee; }
td.l, th.l { text-align: left; }
.scroll { overflow-x: auto; }
figure { margin: 1em 0; }
figcaption { font-size: 12px; color: #555; max-width: 60em; }
.run { border-top: 2px solid #888; margin-top: 2em; padding-top: .5em; }
.side { display: flex; gap: 2em; flex-wrap: wrap; align-items: flex-start; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<h2 id="table">Comparison</h2>
<p>One row per run (compare.csv). Shares are of all requests; TTFT and E2E in ms; prefilled tokens are the tokens actually prefilled (append_tokens); imbalance is the busiest decode/fused worker's share of requests over the mean share.</p>
<div class="scroll"><table>
<tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if lt $i 6}} class="l"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table></div>
<h2 id="plots">Across runs</h2>
{{range .Global}}<figure id="{{.ID}}">{{svg .SVG}}<figcaption>{{.Title}}: {{.Caption}}</figcaption></figure>
{{end}}
<h2 id="runs">Runs</h2>
{{range .Sections}}<section class="run" id="run-{{.Name}}">
<h3>{{.Name}}</h3>
<div class="side">
<table><tr><th class="l" colspan="2">parameters</th></tr>{{range .Params}}<tr><td class="l">{{index . 0}}</td><td class="l">{{index . 1}}</td></tr>{{end}}</table>
<table><tr><th class="l" colspan="2">results</th></tr>{{range .Results}}<tr><td class="l">{{index . 0}}</td><td class="l">{{index . 1}}</td></tr>{{end}}</table>
</div>
<p style="font-size:12px;color:#555">directory: {{.Dir}}</p>
{{if .Faults}}<h4>Faults</h4>
<div class="scroll"><table>
<tr>{{range .FaultHeader}}<th>{{.}}</th>{{end}}</tr>
{{range .Faults}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
<p style="font-size:12px;color:#555">faults.csv: one row per fault (docs/OUTPUTS.md); times in ms of emulated time, "never" for an empty time; retried and failed are the requests the fault hit that were dispatched again or failed with the retry budget spent.</p>
{{end}}{{range .Figures}}<figure id="{{.ID}}">{{svg .SVG}}<figcaption>{{.Title}}: {{.Caption}}</figcaption></figure>
{{end}}</section>
{{end}}
</body>
</html>
`))

package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
	"gonum.org/v1/plot/plotter"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// fixture describes one synthetic run directory of a study.
type fixture struct {
	name, scenario, policy, trace string
	scale                         float64 // latencies are multiplied by it
	requests, failed              int
	partial                       string // stopped_by of a partial run
	direct                        int    // requests served Direct (the rest Seed)
	links                         string // "": no links.csv; "empty": header only; "busy": transfers
	summaryOnly                   bool   // only summary.json and params.json
	slo                           string // raw "slo" object of summary.json ("" none)
}

// writeFixture writes f under root/runs/<name> and returns the directory.
func writeFixture(t testing.TB, root string, f fixture) string {
	t.Helper()
	dir := filepath.Join(root, "runs", f.name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	completed := f.requests - f.failed
	sum := map[string]any{
		"scenario": f.scenario, "policy": f.policy, "seed": 1, "partial": f.partial != "", "stopped_by": f.partial,
		"trace": map[string]any{"path": f.trace, "digest": "sha256:" + f.trace},
		"requests": map[string]any{"total": f.requests, "completed": completed, "failed": f.failed,
			"fail_reasons": map[string]int{}, "unfinished": map[bool]int{true: 7}[f.partial != ""]},
		"ttft_ms":          map[string]float64{"p50": 40 * f.scale, "p90": 90 * f.scale, "p99": 300 * f.scale},
		"e2e_ms":           map[string]float64{"p50": 900 * f.scale, "p90": 2000 * f.scale, "p99": 4000 * f.scale},
		"modes":            map[string]int{"Direct": f.direct, "Seed": completed - f.direct},
		"emulated_seconds": 60,
		"workers": []map[string]any{
			{"name": "d0", "kind": "decode", "requests": completed/2 + 1},
			{"name": "d1", "kind": "decode", "requests": completed - completed/2 - 1},
		},
		"warnings": []string{},
	}
	if f.failed > 0 {
		sum["requests"].(map[string]any)["fail_reasons"] = map[string]int{"exceeds-kv-pool": f.failed}
	}
	if f.slo != "" {
		sum["slo"] = json.RawMessage(f.slo)
	}
	b, err := json.Marshal(sum)
	require.NoError(t, err)
	files := map[string]string{"summary.json": string(b)}
	p, err := json.Marshal(Params{Name: f.name, Scenario: f.scenario, Trace: f.trace, Varied: []string{"scenario", "trace"}})
	require.NoError(t, err)
	files["params.json"] = string(p)
	if !f.summaryOnly {
		var pr strings.Builder
		pr.WriteString("id,mode,arrival_ms,ttft_ms,e2e_ms,append_tokens,cached_tokens,transfer_bytes,failed,d_worker," + strings.Join(TTFTParts, ",") + "\n")
		for i := range f.requests {
			mode, failed := "Seed", i >= completed
			if i < f.direct {
				mode = "Direct"
			}
			ttft := f.scale * float64(10+(i*37)%290)
			fmt.Fprintf(&pr, "%d,%s,%d,%g,%g,%d,%d,%d,%t,d%d", i, mode, i*1000, ttft, 10*ttft, 100+i, 50, 1000*i, failed, i%2)
			for j := range TTFTParts {
				fmt.Fprintf(&pr, ",%g", ttft*float64(j+1)/28)
			}
			pr.WriteString("\n")
		}
		files["per_request.csv"] = pr.String()
		var inst strings.Builder
		inst.WriteString("t_ms,worker,kind,bucket,kv_tokens,queue,running\n")
		for s := range 60 {
			for w := range 2 {
				fmt.Fprintf(&inst, "%d,d%d,decode,,%d,%d,1\n", s*1000, w, 1000*((s+w)%9), (s*w)%4)
			}
		}
		files["instances.csv"] = inst.String()
		files["router_windows.csv"] = "t_ms,window_ms,requests,direct,migrations,blacklists,fallbacks,rejections,direct_share\n0,30000,5,3,0,0,0,1,0.6\n30000,30000,5,4,1,0,0,0,0.8\n"
		switch f.links {
		case "empty":
			files["links.csv"] = "t_ms,nic,bytes_in_flight,rate_gbps,active_transfers,utilisation\n"
		case "busy":
			var l strings.Builder
			l.WriteString("t_ms,nic,bytes_in_flight,rate_gbps,active_transfers,utilisation\n")
			for s := range 60 {
				fmt.Fprintf(&l, "%d,p0/mlx5_0,100,160,1,0.8\n%d,p0/mlx5_0,0,0,0,0\n", s*1000, s*1000+250)
			}
			files["links.csv"] = l.String()
		}
	}
	for n, c := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644))
	}
	return dir
}

// studyFixtures is a two-workload study with every kind of row: a
// clean baseline, runs better and worse than it, a failed run, a partial
// run, a summary-only run, runs with and without KV links, SLO figures.
func studyFixtures() []fixture {
	slo := `{"ttft_ms": 2000, "tpot_ms": 100, "target": 0.9, "ok": true, "attainment": 0.93, "goodput": {"requests_per_s": 1.5}, "sessions": {"session_attainment": 0.8}}`
	return []fixture{
		{name: "kvc__trace=cc", scenario: "kvc", policy: "kvc", trace: "traces/cc", scale: 10, requests: 40, direct: 30, links: "busy", slo: slo},
		{name: "vanilla__trace=cc", scenario: "vanilla", policy: "vanilla", trace: "traces/cc", scale: 30, requests: 40, links: "busy", slo: `{"attainment": 0.5, "target": 0.9, "ok": false, "overloaded": true, "verdict": "overloaded: p99 TTFT 9.0 s is 4.5× the SLO's 2.0 s"}`},
		{name: "dp4__trace=cc", scenario: "dp4", policy: "cache_aware_dp", trace: "traces/cc", scale: 12, requests: 40, failed: 20, links: "empty"},
		{name: "kvc__trace=swe", scenario: "kvc", policy: "kvc", trace: "swe.jsonl", scale: 0.1, requests: 40, direct: 38, links: "busy"},
		{name: "vanilla__trace=swe", scenario: "vanilla", policy: "vanilla", trace: "swe.jsonl", scale: 0.3, requests: 40, partial: "SIGINT", links: "busy"},
		{name: "dp4__trace=swe", scenario: "dp4", policy: "cache_aware_dp", trace: "swe.jsonl", scale: 0.09, requests: 40, summaryOnly: true},
	}
}

func loadStudy(t testing.TB, fs []fixture) (string, []*Run) {
	root := t.TempDir()
	var dirs []string
	for _, f := range fs {
		dirs = append(dirs, writeFixture(t, root, f))
	}
	runs, err := LoadAll(dirs)
	require.NoError(t, err)
	return root, runs
}

// outline is what a reader sees of the page's structure, as text: the
// headings, the warnings and notes, every cell of the comparison table,
// each figure's id, title and caption, and each run's notes. The SVGs
// themselves are not in it (gonum/plot renders them).
func outline(t *testing.T, page []byte) string {
	doc, err := html.Parse(bytes.NewReader(page))
	require.NoError(t, err)
	var b strings.Builder
	space := regexp.MustCompile(`\s+`)
	text := func(n *html.Node) string {
		var sb strings.Builder
		var walk func(*html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.ElementNode && n.Data == "svg" {
				return
			}
			if n.Type == html.TextNode {
				sb.WriteString(n.Data)
			}
			if n.Type == html.ElementNode && (n.Data == "span" || n.Data == "br" || n.Data == "td" || n.Data == "th") {
				sb.WriteString(" ")
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(n)
		return strings.TrimSpace(space.ReplaceAllString(sb.String(), " "))
	}
	attr := func(n *html.Node, k string) string {
		for _, a := range n.Attr {
			if a.Key == k {
				return a.Val
			}
		}
		return ""
	}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch {
			case n.Data == "h1" || n.Data == "h2" || n.Data == "h3" || n.Data == "h4":
				fmt.Fprintf(&b, "%s %s\n", strings.Repeat("#", int(n.Data[1]-'0')), text(n))
				return
			case n.Data == "div" && (attr(n, "class") == "warn" || attr(n, "class") == "note"):
				fmt.Fprintf(&b, "[%s] %s\n", attr(n, "class"), text(n))
				return
			case n.Data == "tr" && strings.Contains(attr(n.Parent.Parent, "class")+attr(n.Parent, "class"), "cmp"):
				var cells []string
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					if c.Type == html.ElementNode {
						cells = append(cells, text(c))
					}
				}
				fmt.Fprintf(&b, "  row(%s): %s\n", attr(n, "class"), strings.Join(cells, " | "))
				return
			case n.Data == "figure":
				cap := ""
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					if c.Type == html.ElementNode && c.Data == "figcaption" {
						cap = text(c)
					}
				}
				fmt.Fprintf(&b, "  figure %s: %s\n", attr(n, "id"), cap)
				return
			case n.Data == "p" && attr(n, "class") == "small":
				fmt.Fprintf(&b, "  note: %s\n", text(n))
				return
			case n.Data == "table" && !strings.Contains(attr(n, "class"), "cmp"):
				for r := n.FirstChild; r != nil; r = r.NextSibling {
					for tr := r.FirstChild; tr != nil; tr = tr.NextSibling {
						if tr.Type == html.ElementNode && tr.Data == "tr" {
							fmt.Fprintf(&b, "  | %s\n", text(tr))
						}
					}
				}
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./report -run %s -update to create it", t.Name())
	assert.Equal(t, string(want), got, "the report's structure changed: if on purpose, rerun with -update and review the diff of %s", path)
}

// The report of a two-workload study with every kind of row, as a
// reader sees its structure.
func TestStudyReportStructureGolden(t *testing.T) {
	root, runs := loadStudy(t, studyFixtures())
	page, err := BuildWith(Options{Title: "study", BaseDir: root}, runs)
	require.NoError(t, err)
	golden(t, "study.golden", outline(t, page.HTML))

	// And with the other workload's baseline named: both groups follow it.
	page, err = BuildWith(Options{Title: "study", BaseDir: root, Baseline: "vanilla__trace=cc"}, runs)
	require.NoError(t, err)
	golden(t, "study-baseline.golden", outline(t, page.HTML))
}

func TestStudyReportIsDeterministic(t *testing.T) {
	root, runs := loadStudy(t, studyFixtures())
	a, err := BuildWith(Options{Title: "s", BaseDir: root}, runs)
	require.NoError(t, err)
	b, err := BuildWith(Options{Title: "s", BaseDir: root}, runs)
	require.NoError(t, err)
	assert.Equal(t, a.HTML, b.HTML)
	assert.NotContains(t, string(a.HTML), "<?xml", "inline SVG, no XML prolog")
	assert.NotRegexp(t, `(src|href)="https?:`, string(a.HTML), "no external resource")
}

func TestBaselineRefusesRunsThatAreNotOK(t *testing.T) {
	root, runs := loadStudy(t, studyFixtures())
	for name, want := range map[string]string{
		"dp4__trace=cc":      "is a failed run",
		"vanilla__trace=swe": "is a partial run",
		"nope":               "is not one of the runs",
	} {
		_, err := BuildWith(Options{Title: "s", BaseDir: root, Baseline: name}, runs)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), want, name)
	}
}

func TestWorkloadsAndBaselines(t *testing.T) {
	_, runs := loadStudy(t, studyFixtures())
	rows, err := MakeRows(runs)
	require.NoError(t, err)
	gs, err := groupWorkloads(runs, rows, "")
	require.NoError(t, err)
	require.Len(t, gs, 2)
	assert.Equal(t, "trace cc", gs[0].Label)
	assert.Equal(t, "trace swe.jsonl", gs[1].Label)
	assert.Equal(t, 0, gs[0].Baseline, "first ok run")
	assert.Equal(t, 0, gs[1].Baseline, "the same configuration (kvc) on the other workload")

	gs, err = groupWorkloads(runs, rows, "vanilla__trace=cc")
	require.NoError(t, err)
	assert.Equal(t, 1, gs[0].Baseline)
	assert.Equal(t, 0, gs[1].Baseline, "vanilla on swe is partial: the first ok run instead")
	assert.Contains(t, gs[1].BaselineNote, "first run with status ok on this workload")

	// A workload whose runs all failed has no baseline and says so.
	bad := []*Run{runs[2]}
	brow := []Row{rows[2]}
	gs, err = groupWorkloads(bad, brow, "")
	require.NoError(t, err)
	assert.Equal(t, -1, gs[0].Baseline)
	assert.Contains(t, gs[0].BaselineNote, "no baseline")
}

func TestStatusOf(t *testing.T) {
	mk := func(total, failed int, partial bool, errS string) Summary {
		var s Summary
		s.Requests.Total, s.Requests.Failed, s.Partial, s.Error = total, failed, partial, errS
		s.StoppedBy = "SIGINT"
		return s
	}
	for _, c := range []struct {
		s    Summary
		code string
		ok   bool
	}{
		{mk(100, 0, false, ""), StatusOK, true},
		{mk(100, 1, false, ""), StatusOK, true}, // 1 % = --max-failed: still ok
		{mk(100, 2, false, ""), StatusFailed, false},
		{mk(100, 0, true, ""), StatusPartial, false},
		{mk(100, 0, false, "bad record at line 501"), StatusError, false},
		{mk(0, 0, false, ""), StatusEmpty, false},
	} {
		st := StatusOf(c.s)
		assert.Equal(t, c.code, st.Code, "%+v", c.s.Requests)
		assert.Equal(t, c.ok, st.OK())
	}
	assert.Contains(t, StatusOf(mk(100, 0, true, "")).Detail, "stopped by SIGINT")
}

func TestStatusAndSLOInCompareCSV(t *testing.T) {
	_, runs := loadStudy(t, studyFixtures())
	rows, err := MakeRows(runs)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, WriteCSV(&b, rows))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	head := strings.Split(lines[0], ",")
	assert.Equal(t, "status", head[6])
	for _, c := range SLOColumns {
		assert.Contains(t, head, c)
	}
	col := func(line int, name string) string {
		for i, h := range head {
			if h == name {
				return strings.Split(lines[line], ",")[i]
			}
		}
		return "?"
	}
	// The expected cells by line: line 1 has SLO figures (goodput_rps is
	// nested one level down in summary.json), line 3 none (empty cells),
	// line 6 is a summary-only run (prefilled_tokens unknown, not 0).
	for line, cells := range map[int]map[string]string{
		1: {"status": "ok", "slo_attainment": "0.93", "goodput_rps": "1.5", "session_slo_attainment": "0.8",
			"slo_target": "0.9", "slo_ok": "true", "overloaded": "false"},
		2: {"slo_ok": "false", "overloaded": "true"},
		3: {"status": "failed", "slo_attainment": ""},
		5: {"status": "partial"},
		6: {"prefilled_tokens": ""},
	} {
		for name, want := range cells {
			assert.Equal(t, want, col(line, name), "line %d %s", line, name)
		}
	}
	assert.NotEqual(t, "", col(1, "prefilled_tokens"))
}

func TestSLOOfToleratesShapes(t *testing.T) {
	for raw, want := range map[string]*float64{
		``:                              nil,
		`null`:                          nil,
		`"x"`:                           nil,
		`{"attainment": 0.5}`:           ptr(0.5),
		`{"attainment": 93}`:            ptr(0.93),
		`{"all": {"attainment": 0.25}}`: ptr(0.25),
	} {
		var s Summary
		s.SLO = json.RawMessage(raw)
		got := sloOf(s).Attainment
		if want == nil {
			assert.Nil(t, got, raw)
		} else {
			require.NotNil(t, got, raw)
			assert.InDelta(t, *want, *got, 1e-12, raw)
		}
	}
}

func ptr(v float64) *float64 { return &v }

func TestFormats(t *testing.T) {
	for v, want := range map[float64]string{0: "0 ms", 0.42: "0.42 ms", 41.2: "41 ms", 1234: "1.23 s", 336000: "5.6 min", 7.56e6: "2.1 h"} {
		assert.Equal(t, want, fmtMS(v), "%g", v)
	}
	for v, want := range map[float64]string{950: "950", 12345: "12.3 K", 4.56e6: "4.56 M", 7e9: "7.00 G", 1e6: "1.00 M", 999999: "1000 K", -2.5e6: "-2.50 M", 3e12: "3000 G"} {
		assert.Equal(t, want, fmtCount(v), "%g", v)
	}
	for v, want := range map[float64]string{0: "0 B", 512: "512 B", 3.4e9: "3.40 GB", 1.72e12: "1.72 TB", 1000: "1.00 kB", 1.5e15: "1500 TB", -4e6: "-4.00 MB"} {
		assert.Equal(t, want, fmtBytes(v), "%g", v)
	}
	for _, c := range []struct {
		v, b                float64
		points, lowerBetter bool
		s, class            string
	}{
		{90, 100, false, true, "-10 %", "better"},
		{110, 100, false, true, "+10 %", "worse"},
		{100.2, 100, false, true, "±0", ""},
		{2300, 100, false, true, "23×", "worse"},
		{250, 100, false, true, "2.5×", "worse"},
		{0.5, 0.6, true, false, "-10.0 pp", "worse"},
		{5, 0, false, true, "new", ""},
		{0.238, 588, false, true, "÷2471", "better"},
		{5, 100, false, true, "÷20.0", "better"},
		{0, 100, false, true, "-100 %", "better"},
	} {
		s, class := delta(c.v, c.b, c.points, c.lowerBetter)
		assert.Equal(t, c.s, s, "%+v", c)
		assert.Equal(t, c.class, class, "%+v", c)
	}
}

// A study bigger than maxPanelLines shows the baseline and the best and
// worst runs on its line plots, and says so; the table keeps every run.
func TestBigStudyPanelsShowBestAndWorst(t *testing.T) {
	var fs []fixture
	for i := range 12 {
		fs = append(fs, fixture{name: fmt.Sprintf("r%02d", i), scenario: "s", policy: "kvc", trace: "t.jsonl",
			scale: float64(1 + (i*5)%12), requests: 20, direct: 10})
	}
	root, runs := loadStudy(t, fs)
	// r06 (latency scale 7 of 1..12) is neither among the best nor the worst.
	page, err := BuildWith(Options{Title: "big", BaseDir: root, Baseline: "r06"}, runs)
	require.NoError(t, err)
	o := outline(t, page.HTML)
	assert.Equal(t, 12, strings.Count(o, "row(base)")+strings.Count(o, "row()")-1, "every run in the table (and the header)")
	var cdf *Figure
	for _, f := range page.Figures {
		if f.ID == "ttft_cdf" {
			cdf = f
		}
	}
	require.NotNil(t, cdf)
	assert.Contains(t, cdf.Caption, "7 of 12 runs shown")
	legend := 0
	for i := range 12 {
		if bytes.Contains(cdf.SVG, []byte(fmt.Sprintf(">r%02d<", i))) {
			legend++
		}
	}
	assert.Equal(t, 7, legend)
	assert.True(t, bytes.Contains(cdf.SVG, []byte(">r06<")), "the baseline is always shown")
}

func TestTimeWeightedIsTheStepIntegral(t *testing.T) {
	// 0.8 for 0.25 s of every second, over 60 s: a mean of 0.2 in every
	// 2 s bin.
	var xys plotter.XYs
	for s := range 60 {
		xys = append(xys, plotter.XY{X: float64(s), Y: 0.8}, plotter.XY{X: float64(s) + 0.25, Y: 0})
	}
	for b, v := range timeWeighted(xys, 2, 30, 60) {
		assert.InDelta(t, 0.2, v, 1e-9, "bin %d", b)
	}
	// Busy from 10 s to the end: 0 before, 1 after, the bin across it in between.
	got := timeWeighted(plotter.XYs{{X: 0, Y: 0}, {X: 11, Y: 1}}, 2, 30, 60)
	assert.InDelta(t, 0.0, got[4], 1e-9)
	assert.InDelta(t, 0.5, got[5], 1e-9)
	assert.InDelta(t, 1.0, got[29], 1e-9)
}

// A study kept with summary.json only (compare --outputs summary): rows
// from the summaries, no per-request plots, and the page says so.
func TestSummaryOnlyStudy(t *testing.T) {
	fs := studyFixtures()[:2]
	for i := range fs {
		fs[i].summaryOnly = true
	}
	root, runs := loadStudy(t, fs)
	page, err := BuildWith(Options{Title: "s", BaseDir: root}, runs)
	require.NoError(t, err)
	o := outline(t, page.HTML)
	assert.Contains(t, o, "[note] Runs kept with fewer outputs: kvc__trace=cc (no per_request.csv, no instances.csv); vanilla__trace=cc")
	assert.Contains(t, o, "note: No CDF, Direct share or TTFT-parts plots: no run of this workload has its per_request.csv")
	assert.Contains(t, o, "row(): vanilla__trace=cc | ok overloaded | 40 | 0.0 % ±0 | 0.0 % -75.0 pp | 1.20 s 3.0×")
	ids := figureIDs(page)
	assert.Equal(t, []string{"mode_mix"}, ids, "only the mode mix, from the summaries")
}

// A P/D run's prefix caches and KV pools get a plot each: on one axis the
// prefill worker's larger range would flatten the decode lines.
func TestPrefixCachesApartFromKVPools(t *testing.T) {
	root, runs := loadStudy(t, studyFixtures()[:1])
	inst := "t_ms,worker,kind,bucket,kv_tokens,queue,running\n0,p0,prefill,,700000,0,0\n0,d0,decode,,80000,1,1\n1000,p0,prefill,,710000,0,0\n1000,d0,decode,,60000,0,1\n"
	require.NoError(t, os.WriteFile(filepath.Join(runs[0].Dir, "instances.csv"), []byte(inst), 0o644))
	r, err := Load(runs[0].Dir)
	require.NoError(t, err)
	page, err := BuildWith(Options{Title: "s", BaseDir: root}, []*Run{r})
	require.NoError(t, err)
	var kv, cache *Figure
	for _, f := range page.Figures {
		switch f.ID {
		case "kvc__trace=cc__kv":
			kv = f
		case "kvc__trace=cc__kv_prefill":
			cache = f
		}
	}
	require.NotNil(t, kv)
	require.NotNil(t, cache)
	assert.Contains(t, string(kv.SVG), ">d0<")
	assert.NotContains(t, string(kv.SVG), ">p0<")
	assert.Contains(t, string(cache.SVG), ">p0<")
	assert.NotContains(t, string(cache.SVG), ">d0<")
}

// A run with no request (or none completed) draws no empty plot: every
// figure of a study of such runs has data, or is absent.
func TestRunsWithoutRequestsDrawNoEmptyAxes(t *testing.T) {
	fs := studyFixtures()[:2]
	fs[0].requests, fs[0].direct = 0, 0
	fs[1].failed = fs[1].requests
	root, runs := loadStudy(t, fs)
	page, err := BuildWith(Options{Title: "s", BaseDir: root}, runs)
	require.NoError(t, err)
	for _, f := range page.Figures {
		assert.NotContains(t, f.ID, "cdf", "no completed request anywhere: no CDF")
		assert.NotContains(t, f.ID, "ttft_parts")
	}
	o := outline(t, page.HTML)
	assert.Contains(t, o, "row(notok): kvc__trace=cc | empty no requests")
	assert.Contains(t, o, "row(notok): vanilla__trace=cc | failed 40 of 40 requests failed (100.0 %)")
}

// Runs that wrote no results (a compare run that failed before its
// summary.json) are listed loudly with their errors.
func TestFailedRunsWithoutResultsAreListed(t *testing.T) {
	root, runs := loadStudy(t, studyFixtures()[:1])
	page, err := BuildWith(Options{Title: "s", BaseDir: root,
		Failed: []FailedRun{{Name: "dp4__trace=cc", Error: "workload: stat traces/cc: no such file or directory"}}}, runs)
	require.NoError(t, err)
	assert.Contains(t, outline(t, page.HTML),
		"[warn] 1 run of this study wrote no results and is in no table or plot below:dp4__trace=cc: workload: stat traces/cc: no such file or directory")
}

// Runs given with their workloads interleaved are shown by workload, in
// the table, the mode mix and the runs' sections alike.
func TestRunsShownByWorkload(t *testing.T) {
	all := studyFixtures()
	root, runs := loadStudy(t, []fixture{all[0], all[3], all[1]}) // cc, swe, cc
	page, err := BuildWith(Options{Title: "s", BaseDir: root}, runs)
	require.NoError(t, err)
	o := outline(t, page.HTML)
	var sections []string
	for _, l := range strings.Split(o, "\n") {
		if strings.HasPrefix(l, "### ") {
			sections = append(sections, strings.TrimPrefix(l, "### "))
		}
	}
	assert.Equal(t, []string{"kvc__trace=cc", "vanilla__trace=cc", "kvc__trace=swe"}, sections)
	mix := string(page.Figures[0].SVG)
	assert.Greater(t, strings.Index(mix, ">vanilla__trace=cc<"), strings.Index(mix, ">kvc__trace=swe<"), "the mode mix lists runs top-down in the table order (its labels are drawn bottom-up)")
}

// Keeping only the columns the report reads changes nothing in what it
// builds: a column a new figure reads must be added to the kept lists.
func TestColumnProjectionChangesNothing(t *testing.T) {
	root, _ := loadStudy(t, studyFixtures())
	build := func() []byte {
		ents, err := os.ReadDir(filepath.Join(root, "runs"))
		require.NoError(t, err)
		var dirs []string
		for _, e := range ents {
			dirs = append(dirs, filepath.Join(root, "runs", e.Name()))
		}
		runs, err := LoadAll(dirs)
		require.NoError(t, err)
		page, err := BuildWith(Options{Title: "s", BaseDir: root}, runs)
		require.NoError(t, err)
		var b bytes.Buffer
		rows, err := MakeRows(runs)
		require.NoError(t, err)
		require.NoError(t, WriteCSV(&b, rows))
		return append(page.HTML, b.Bytes()...)
	}
	projected := build()
	rc, ic, lc := requestColumns, instanceColumns, linkColumns
	requestColumns, instanceColumns, linkColumns = nil, nil, nil
	defer func() { requestColumns, instanceColumns, linkColumns = rc, ic, lc }()
	assert.Equal(t, string(build()), string(projected))
}

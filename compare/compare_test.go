package compare_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/compare"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/report"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

func TestExpand(t *testing.T) {
	cases := []struct {
		name string
		sets []string
		want [][]string
		err  string
	}{
		{"none", nil, [][]string{{}}, ""},
		{"one value", []string{"router.tau_append=4096"}, [][]string{{"router.tau_append=4096"}}, ""},
		{"list", []string{"router.tau_append=1024,4096"}, [][]string{{"router.tau_append=1024"}, {"router.tau_append=4096"}}, ""},
		{"product, first slowest", []string{"a.x=1,2", "decode.*.gpu=H100-SXM,H200-SXM"}, [][]string{
			{"a.x=1", "decode.*.gpu=H100-SXM"}, {"a.x=1", "decode.*.gpu=H200-SXM"},
			{"a.x=2", "decode.*.gpu=H100-SXM"}, {"a.x=2", "decode.*.gpu=H200-SXM"}}, ""},
		{"spaces trimmed", []string{"a.x = 1, 2"}, [][]string{{"a.x=1"}, {"a.x=2"}}, ""},
		{"no =", []string{"router.tau_append"}, nil, "want PATH=VALUE"},
		{"empty path", []string{"=3"}, nil, "want PATH=VALUE"},
		{"empty value", []string{"a.x=1,,2"}, nil, "empty value"},
		{"duplicate value", []string{"a.x=1,1"}, nil, "given twice"},
		{"duplicate path", []string{"a.x=1", "a.x=2"}, nil, "given twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := compare.Expand(c.sets)
			checkCase(t, got, err, c.want, c.err)
		})
	}
}

func TestPlanNamesSayWhatVaried(t *testing.T) {
	p := compare.Plan{
		Scenarios: []string{"1p3d-mlx5", "scenarios/dp4.hcl"},
		Set:       []string{"router.tau_append=1024,4096", "decode.*.gpu=H100-SXM"},
		Seeds:     2,
	}
	runs, err := p.Runs()
	require.NoError(t, err)
	var names []string
	for _, r := range runs {
		names = append(names, r.Name)
		assert.Equal(t, []string{"scenario", "router.tau_append", "seed"}, r.Varied)
		assert.Contains(t, r.Set, "decode.*.gpu=H100-SXM", "a fixed --set still applies")
		require.NotNil(t, r.Seed)
	}
	assert.Equal(t, []string{
		"1p3d-mlx5__router.tau_append=1024__seed=1", "1p3d-mlx5__router.tau_append=1024__seed=2",
		"1p3d-mlx5__router.tau_append=4096__seed=1", "1p3d-mlx5__router.tau_append=4096__seed=2",
		"dp4__router.tau_append=1024__seed=1", "dp4__router.tau_append=1024__seed=2",
		"dp4__router.tau_append=4096__seed=1", "dp4__router.tau_append=4096__seed=2",
	}, names)

	// One seed: the scenario's own (nil), and the name carries no seed.
	runs, err = compare.Plan{Scenarios: []string{"a.hcl", "dir/a.hcl"}, Set: []string{"decode.*.gpu=A,B"}}.Runs()
	require.NoError(t, err)
	assert.Nil(t, runs[0].Seed)
	assert.Equal(t, "a__decode._.gpu=A", runs[0].Name, "sanitized for file names")
	assert.Equal(t, "a__decode._.gpu=A__2", runs[2].Name, "same stem twice: made unique")

	// Several traces are an axis, named by their base name.
	runs, err = compare.Plan{Scenarios: []string{"dp4"}, Traces: []string{"/t/weka-claude-code", "swe.jsonl"}}.Runs()
	require.NoError(t, err)
	require.Len(t, runs, 2)
	assert.Equal(t, "dp4__trace=weka-claude-code", runs[0].Name)
	assert.Equal(t, "/t/weka-claude-code", runs[0].Trace)
	assert.Equal(t, "dp4__trace=swe", runs[1].Name)
	assert.Equal(t, []string{"trace"}, runs[1].Varied)
	_, err = compare.Plan{Scenarios: []string{"dp4"}, Traces: []string{"a", "a"}}.Runs()
	assert.Error(t, err)

	// Several routers too, before the traces in the order.
	runs, err = compare.Plan{Scenarios: []string{"claude-code"}, Routers: []string{"kvc", "vanilla"}, Traces: []string{"a.jsonl", "b"}}.Runs()
	require.NoError(t, err)
	var got []string
	for _, r := range runs {
		got = append(got, r.Name+" "+r.Router+" "+r.Trace)
	}
	assert.Equal(t, []string{
		"claude-code__router=kvc__trace=a kvc a.jsonl", "claude-code__router=kvc__trace=b kvc b",
		"claude-code__router=vanilla__trace=a vanilla a.jsonl", "claude-code__router=vanilla__trace=b vanilla b",
	}, got)
	assert.Equal(t, []string{"router", "trace"}, runs[0].Varied)
	runs, err = compare.Plan{Scenarios: []string{"x"}, Routers: []string{"vanilla"}}.Runs()
	require.NoError(t, err)
	assert.Equal(t, "x__router=vanilla", runs[0].Name, "one router is not an axis, but the name says the policy was swapped")
	assert.Equal(t, "vanilla", runs[0].Router)
	_, err = compare.Plan{Scenarios: []string{"dp4"}, Routers: []string{"a", "a"}}.Runs()
	assert.Error(t, err)

	_, err = compare.Plan{}.Runs()
	assert.Error(t, err)
}

// Property: the plan has scenarios × Π values × seeds runs, unique names
// that are safe file names, and each run's Set has one value per path.
func TestPlanProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nsc := rapid.IntRange(1, 3).Draw(t, "scenarios")
		var scens []string
		for i := range nsc {
			scens = append(scens, fmt.Sprintf("s%d", i%2)) // may repeat
		}
		naxes := rapid.IntRange(0, 3).Draw(t, "axes")
		want := nsc
		var sets []string
		for a := range naxes {
			nv := rapid.IntRange(1, 3).Draw(t, "values")
			var vs []string
			for v := range nv {
				vs = append(vs, rapid.SampledFrom([]string{"x", "y/z", "*", "a b"}).Draw(t, "v")+strconv.Itoa(v))
			}
			sets = append(sets, fmt.Sprintf("p%d.q=%s", a, strings.Join(vs, ",")))
			want *= nv
		}
		seeds := rapid.IntRange(1, 3).Draw(t, "seeds")
		want *= seeds
		runs, err := compare.Plan{Scenarios: scens, Set: sets, Seeds: seeds}.Runs()
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != want {
			t.Fatalf("%d runs, want %d", len(runs), want)
		}
		seen := map[string]bool{}
		for _, r := range runs {
			if seen[r.Name] {
				t.Fatalf("duplicate name %q", r.Name)
			}
			seen[r.Name] = true
			if r.Name != report.SanitizeName(r.Name) {
				t.Fatalf("unsafe name %q", r.Name)
			}
			if len(r.Set) != naxes {
				t.Fatalf("set %v: want %d entries", r.Set, naxes)
			}
		}
	})
}

// testLoad loads an embedded scenario and applies the test's own
// overrides, so that this test does not depend on topology's --set:
// "workload.sessions=N" sets the generator's sessions.
func testLoad(p report.Params) (*topology.Spec, error) {
	src, err := scenarios.Read(p.Scenario)
	if err != nil {
		return nil, err
	}
	spec, err := topology.Parse("<embedded>/"+p.Scenario+".hcl", src, topology.Options{})
	if err != nil {
		return nil, err
	}
	for _, kv := range p.Set {
		path, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if path != "workload.sessions" || err != nil {
			return nil, fmt.Errorf("test loader: unsupported --set %s", kv)
		}
		spec.Workload.Generator.Sessions = n
	}
	if p.Seed != nil {
		spec.Workload.Seed = *p.Seed
	}
	if p.MaxRequests > 0 {
		spec.Workload.MaxRequests = p.MaxRequests
	}
	return spec, nil
}

func smallPlan(t *testing.T) []report.Params {
	runs, err := compare.Plan{
		Scenarios:   []string{"1p3d-mlx5", "vanilla-pd-1p3d"},
		Set:         []string{"workload.sessions=3,4"},
		Seeds:       2,
		MaxRequests: 40,
	}.Runs()
	require.NoError(t, err)
	require.Len(t, runs, 8)
	return runs
}

func TestSmallCompare(t *testing.T) {
	runs := smallPlan(t)
	seq, par := t.TempDir(), t.TempDir()
	var done []string
	res, err := compare.Execute(context.Background(), runs, compare.Options{Out: seq, Jobs: 1, Load: testLoad,
		RunDone: func(d, total int, name string, err error) { done = append(done, name) }})
	require.NoError(t, err)
	require.Len(t, res.Rows, 8)
	assert.Len(t, done, 8)
	_, err = compare.Execute(context.Background(), runs, compare.Options{Out: par, Jobs: 2, Load: testLoad})
	require.NoError(t, err)

	t.Run("parallel and sequential runs are byte-identical", func(t *testing.T) {
		a, b := testkit.ReadTree(t, filepath.Join(seq, "runs")), testkit.ReadTree(t, filepath.Join(par, "runs"))
		require.Len(t, a, len(b))
		assert.GreaterOrEqual(t, len(a), 8*4, "per_request.csv, instances.csv, summary.json, params.json per run")
		for name, content := range a {
			assert.True(t, bytes.Equal(content, b[name]), "%s differs between --jobs 1 and --jobs 2", name)
		}
		for _, f := range []string{"compare.csv", "compare.json", "report.html"} {
			x, err := os.ReadFile(filepath.Join(seq, f))
			require.NoError(t, err)
			y, err := os.ReadFile(filepath.Join(par, f))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(x, y), "%s differs", f)
		}
	})

	t.Run("compare.csv matches the per-run summaries", func(t *testing.T) {
		col, recs := testkit.ReadCSV(t, filepath.Join(seq, "compare.csv"))
		require.Len(t, recs, len(runs))
		for i, rec := range recs {
			require.Equal(t, runs[i].Name, rec[col["run"]], "rows in plan order")
			var s struct {
				Scenario string `json:"scenario"`
				Seed     uint64 `json:"seed"`
				Requests struct{ Total, Failed int }
				TTFT     struct{ P50, P90, P99 float64 } `json:"ttft_ms"`
				E2E      struct{ P50, P90, P99 float64 } `json:"e2e_ms"`
				Modes    map[string]int
				Workers  []struct {
					Kind     string
					Requests int
				}
			}
			b, err := os.ReadFile(filepath.Join(compare.RunDir(seq, runs[i].Name), "summary.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &s))
			num := func(name string) float64 {
				v, err := strconv.ParseFloat(rec[col[name]], 64)
				require.NoError(t, err, name)
				return v
			}
			assert.Equal(t, s.Scenario, rec[col["scenario"]])
			assert.Equal(t, float64(*runs[i].Seed), num("seed"))
			assert.Equal(t, float64(s.Seed), num("seed"), "the seed applied is the seed recorded")
			assert.Equal(t, float64(s.Requests.Total), num("requests"))
			assert.Equal(t, 40.0, num("requests"), "--max-requests applied")
			assert.Equal(t, float64(s.Requests.Failed), num("failed"))
			assert.Equal(t, s.TTFT.P50, num("ttft_p50_ms"))
			assert.Equal(t, s.TTFT.P99, num("ttft_p99_ms"))
			assert.Equal(t, s.E2E.P90, num("e2e_p90_ms"))
			assert.InDelta(t, float64(s.Modes["Direct"])/float64(s.Requests.Total), num("direct_share"), 1e-4)
			assert.InDelta(t, float64(s.Modes["Vanilla"])/float64(s.Requests.Total), num("vanilla_share"), 1e-4)
			assert.Equal(t, runs[i].Set[0], rec[col["set"]])
			mx, sum, n := 0, 0, 0
			for _, w := range s.Workers {
				if w.Kind == "decode" {
					mx, sum, n = max(mx, w.Requests), sum+w.Requests, n+1
				}
			}
			assert.InDelta(t, float64(mx)*float64(n)/float64(sum), num("imbalance"), 1e-4)
			assert.GreaterOrEqual(t, num("imbalance"), 1.0)
		}
		// The two --set values give different workloads.
		a, b := testkit.ReadTree(t, compare.RunDir(seq, runs[0].Name)), testkit.ReadTree(t, compare.RunDir(seq, runs[2].Name))
		assert.NotEqual(t, a["per_request.csv"], b["per_request.csv"])
	})

	t.Run("params.json records what was run", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(compare.RunDir(seq, runs[3].Name), "params.json"))
		require.NoError(t, err)
		var p report.Params
		require.NoError(t, json.Unmarshal(b, &p))
		assert.Equal(t, runs[3], p)
	})

	t.Run("report is offline HTML and every SVG parses", func(t *testing.T) { checkReport(t, seq) })
}

// checkReport parses DIR/report.html and DIR/plots/*.svg.
func checkReport(t *testing.T, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	doc, err := html.Parse(bytes.NewReader(b))
	require.NoError(t, err)
	var svgs, tables int
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "svg":
				svgs++
			case "table":
				tables++
			case "script", "iframe", "object", "embed":
				t.Errorf("report has a <%s>", n.Data)
			}
			for _, a := range n.Attr {
				k := strings.ToLower(a.Key)
				if k == "src" || k == "href" || strings.HasSuffix(k, ":href") || k == "action" {
					v := strings.TrimSpace(a.Val)
					if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "//") {
						t.Errorf("external resource <%s %s=%q>", n.Data, a.Key, a.Val)
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	assert.NotContains(t, string(b), "url(http", "no external CSS resource")
	assert.NotContains(t, string(b), "@import")
	assert.Contains(t, string(b), "TTFT CDF")

	files, err := filepath.Glob(filepath.Join(dir, "plots", "*.svg"))
	require.NoError(t, err)
	assert.Equal(t, len(files), svgs, "every plot inline and as a file")
	assert.GreaterOrEqual(t, len(files), 4)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		d := xml.NewDecoder(bytes.NewReader(data))
		root := ""
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, f)
			if se, ok := tok.(xml.StartElement); ok && root == "" {
				root = se.Name.Local
			}
		}
		assert.Equal(t, "svg", root, f)
	}

	// A real browser, when one is installed (not required: CI may lack it).
	browser := ""
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			browser = p
			break
		}
	}
	if browser == "" || testing.Short() {
		t.Log("no headless browser on this machine: skipping the browser check")
		return
	}
	abs, err := filepath.Abs(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--dump-dom", "file://"+abs).Output()
	require.NoError(t, err)
	dom := string(out)
	assert.Contains(t, dom, "TTFT CDF")
	assert.Equal(t, svgs, strings.Count(dom, "<svg"), "the browser sees every plot")
}

func TestExecuteStopsOnBadInputBeforeRunning(t *testing.T) {
	runs, err := compare.Plan{Scenarios: []string{"1p3d-mlx5"}, Set: []string{"workload.nope=1,2"}}.Runs()
	require.NoError(t, err)
	out := t.TempDir()
	_, err = compare.Execute(context.Background(), runs, compare.Options{Out: out, Load: testLoad})
	var le *compare.LoadError
	require.ErrorAs(t, err, &le)
	_, statErr := os.Stat(filepath.Join(out, "runs"))
	assert.True(t, os.IsNotExist(statErr), "nothing ran")
}

package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/plotter"
	"pgregory.net/rapid"
)

const summaryJSON = `{
  "scenario": "x", "policy": "kvc", "seed": 7,
  "requests": {"total": 4, "completed": 3, "failed": 1},
  "ttft_ms": {"p50": 10, "p90": 20, "p99": 30},
  "e2e_ms": {"p50": 100, "p90": 200, "p99": 300},
  "modes": {"Direct": 2, "Seed": 1, "Reseed": 1},
  "workers": [
    {"name": "p0", "kind": "prefill", "requests": 9},
    {"name": "d0", "kind": "decode", "requests": 3},
    {"name": "d1", "kind": "decode", "requests": 1}
  ],
  "router": {"migrations": 1}
}`

// writeRun writes a synthetic run directory. Columns are in an unusual
// order with an unknown one: the report reads them by name.
func writeRun(t *testing.T, optional bool) string {
	dir := t.TempDir()
	files := map[string]string{
		"summary.json": summaryJSON,
		"per_request.csv": "future_col,mode,arrival_ms,id,ttft_ms,e2e_ms,append_tokens,cached_tokens,transfer_bytes,failed,d_worker\n" +
			"z,Direct,0,0,5,50,100,10,0,false,d0\n" +
			"z,Seed,1000,1,15,150,200,0,1000,false,d0\n" +
			"z,Reseed,2000,2,25,250,300,20,2000,false,d1\n" +
			"z,Direct,3000,3,0,0,0,0,0,true,d0\n",
		"instances.csv": "t_ms,worker,kind,bucket,kv_tokens,queue,running,new_col\n" +
			"0,d0,decode,,10,1,1,q\n0,d1,decode,,20,0,1,q\n1000,d0,decode,,30,2,1,q\n1000,d1,decode,,5,0,0,q\n",
	}
	if optional {
		files["links.csv"] = "t_ms,nic,bytes_in_flight,rate_gbps,active_transfers,utilisation\n0,mlx5_0,0,200,0,0\n1000,mlx5_0,100,200,1,0.5\n"
		files["router_windows.csv"] = "t_ms,window_ms,requests,direct,migrations,blacklists,fallbacks,rejections,direct_share\n0,1000,2,1,0,0,0,0,0.5\n1000,1000,2,1,1,0,0,1,0.5\n"
		pr := "mode,arrival_ms,ttft_ms,e2e_ms,append_tokens,failed," + strings.Join(TTFTParts, ",") + "\n" +
			"Direct,0,7,50,1,false,1,1,1,1,1,1,1\nSeed,1,14,60,1,false,2,2,2,2,2,2,2\n"
		files["per_request.csv"] = pr
		files["params.json"] = `{"name": "x__seed=7", "scenario": "x", "set": ["router.tau_append=4096"], "varied": ["seed"]}`
	}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

func TestMakeRowReadsByName(t *testing.T) {
	r, err := Load(writeRun(t, false))
	require.NoError(t, err)
	assert.Nil(t, r.Params)
	assert.Nil(t, r.Links)
	row, err := MakeRow(r)
	require.NoError(t, err)
	assert.Equal(t, int64(600), row.PrefilledTokens)
	assert.Equal(t, int64(30), row.CachedTokens)
	assert.Equal(t, int64(3000), row.TransferBytes)
	assert.Equal(t, 0.5, row.ModeShare["Direct"])
	assert.Equal(t, 0.25, row.ModeShare["Seed"])
	assert.Equal(t, 0.0, row.ModeShare["Fused"])
	assert.Equal(t, 1.5, row.Imbalance, "max 3 of d0,d1 over mean 2; the prefill worker is not counted")
	assert.Equal(t, Percentiles{10, 20, 30}, row.TTFT)
}

func TestImbalanceFallsBackToPerRequestWorkers(t *testing.T) {
	r, err := Load(writeRun(t, false))
	require.NoError(t, err)
	for i := range r.Summary.Workers {
		r.Summary.Workers[i].Requests = 0
	}
	assert.Equal(t, 0.0, Imbalance(r.Summary))
	assert.InDelta(t, 1.5, imbalanceOf(r), 1e-9, "d0 3 requests, d1 1")
}

func figureIDs(p *Page) []string {
	var ids []string
	for _, f := range p.Figures {
		ids = append(ids, f.ID)
	}
	return ids
}

func TestOptionalFilesArePlottedWhenPresent(t *testing.T) {
	without, err := Load(writeRun(t, false))
	require.NoError(t, err)
	with, err := Load(writeRun(t, true))
	require.NoError(t, err)
	assert.Equal(t, "x__seed=7", with.Name, "params.json names the run")

	p, err := Build("t", "", []*Run{without})
	require.NoError(t, err)
	ids := figureIDs(p)
	assert.Contains(t, ids, "ttft_cdf")
	assert.Contains(t, ids, "mode_mix")
	assert.Contains(t, ids, "direct_share")
	for _, id := range ids {
		assert.NotContains(t, id, "links")
		assert.NotContains(t, id, "router")
		assert.NotContains(t, id, "ttft_parts")
	}

	p, err = Build("t", "", []*Run{without, with})
	require.NoError(t, err)
	ids = figureIDs(p)
	assert.Contains(t, ids, "ttft_parts_p50")
	assert.Contains(t, ids, "ttft_parts_p99")
	assert.Contains(t, ids, "x__seed=7__links")
	assert.Contains(t, ids, "x__seed=7__router")
	assert.Contains(t, ids, "x__seed=7__kv")
	h := string(p.HTML)
	assert.Contains(t, h, "router.tau_append=4096", "parameters shown")
	assert.Contains(t, h, "Link utilisation")
}

// A bad cell in a run's CSV is an error naming its row and column (in
// per_request.csv, and in faults.csv).
func TestBadCellIsAnErrorWithItsRow(t *testing.T) {
	for _, tc := range []struct{ file, content, want string }{
		{"per_request.csv", "mode,arrival_ms,ttft_ms,e2e_ms,append_tokens\nDirect,0,1,2,3\nDirect,1,x,2,3\n", "row 3 column ttft_ms"},
		{"faults.csv", "id,at_ms,end_ms,retried,failed\n0,1000,x,1,0\n", "row 2 column end_ms"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := writeRun(t, false)
			require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644))
			r, err := Load(dir)
			require.NoError(t, err)
			_, err = Build("t", "", []*Run{r})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestLoadNeedsARunDirectory(t *testing.T) {
	_, err := Load(t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a pdemu run directory")
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"1p3d-mlx5__router.tau_append=4096__seed=2": "1p3d-mlx5__router.tau_append=4096__seed=2",
		"decode.*.gpu=H100 SXM":                     "decode._.gpu=H100_SXM",
		"../x/y":                                    "_x_y",
		"":                                          "_",
	} {
		assert.Equal(t, want, SanitizeName(in), in)
	}
}

func TestDownsampleKeepsExtremes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 5000).Draw(t, "n")
		ys := rapid.SliceOfN(rapid.Float64Range(-1e6, 1e6), n, n).Draw(t, "ys")
		xys := make(plotter.XYs, n)
		for i, y := range ys {
			xys[i] = plotter.XY{X: float64(i), Y: y}
		}
		out := downsample(xys, 100)
		if len(out) > max(100, 0) && n > 100 {
			t.Fatalf("%d points", len(out))
		}
		if n == 0 {
			return
		}
		mn, mx := math.Inf(1), math.Inf(-1)
		for _, p := range xys {
			mn, mx = math.Min(mn, p.Y), math.Max(mx, p.Y)
		}
		omn, omx := math.Inf(1), math.Inf(-1)
		for i, p := range out {
			omn, omx = math.Min(omn, p.Y), math.Max(omx, p.Y)
			if i > 0 && p.X <= out[i-1].X {
				t.Fatalf("x not increasing at %d", i)
			}
		}
		if mn != omn || mx != omx {
			t.Fatalf("extremes lost: %v %v vs %v %v", mn, mx, omn, omx)
		}
	})
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/workload"
)

// writeTrace writes a Mooncake-format trace of requests with these
// prompt lengths (1 output token each, distinct sessions) and returns
// its path.
func writeTrace(t *testing.T, lens ...int) string {
	t.Helper()
	var b strings.Builder
	for i, n := range lens {
		fmt.Fprintf(&b, `{"timestamp":%d,"input_length":%d,"output_length":1,"hash_ids":[%d]}`+"\n", i*1000, n, 1000+i)
	}
	p := filepath.Join(t.TempDir(), "t.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

// Requests a cluster cannot serve are counted before the run, for the
// reason the run will give, with the flag that fixes them; above
// --max-failed nothing runs (exit 2), below it the run warns.
func TestPreflightCountsRequestsThatCannotFit(t *testing.T) {
	// 1p3d-mlx5: context 262,144 (the preset), ρ·K_d = 87,498.
	trace := writeTrace(t, 1000, 100_000, 300_000, 2000)
	out := t.TempDir()
	_, _, err := runCLI(t, "run", "--trace", trace, "--out", out, "-q")
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	msg := err.Error()
	for _, want := range []string{"2 of 4 requests (50.0%) cannot be served", "1 exceed the context, max_model_len = 262144",
		"--set '*.*.max_model_len=524288'", "1 fit the context but no decode worker's KV pool (largest ρ·K_d 87498 tokens)",
		"--set 'decode.*.kv_budget_tokens=0'", "checked before the run"} {
		assert.Contains(t, msg, want)
	}
	_, err = os.Stat(filepath.Join(out, "summary.json"))
	assert.True(t, os.IsNotExist(err), "nothing ran")

	// The fixes, typed: every request is served.
	_, _, err = runCLI(t, "run", "--trace", trace, "--out", out, "-q", "--set", "*.*.max_model_len=524288", "--set", "decode.*.kv_budget_tokens=0")
	require.NoError(t, err)

	// Under --max-failed: a warning, and the run fails exactly those.
	_, stderr, err := runCLI(t, "run", "--trace", trace, "--out", out, "-q", "--force", "--max-failed", "0.6")
	require.NoError(t, err)
	assert.Contains(t, stderr, "pdemu: warning: 1p3d-mlx5: 2 of 4 requests")
	assert.Contains(t, stderr, "2 of 4 requests failed (50.0%): exceeds-context 1, exceeds-kv-pool 1")
}

// compare checks every run before the first starts: a missing trace, a
// used run directory and requests that cannot fit fail at once, naming
// the run; --seeds on a trace replayed as recorded warns.
func TestComparePreflight(t *testing.T) {
	out := t.TempDir()
	_, _, err := runCLI(t, "compare", "1p3d-mlx5", "dp4", "--trace", "/nonexistent/trace.jsonl", "--out", out, "-q")
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	assert.Contains(t, err.Error(), "run 1p3d-mlx5")
	_, err = os.Stat(filepath.Join(out, "runs"))
	assert.True(t, os.IsNotExist(err), "nothing ran")

	// A --set that one scenario does not take names that run.
	_, _, err = runCLI(t, "compare", "1p3d-mlx5", "dp4", "--set", "decode.*.kv_budget_tokens=0", "--out", out, "-q")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run dp4: ")
	assert.Contains(t, err.Error(), "Unknown --set path")

	big := writeTrace(t, 1000, 200_000)
	_, _, err = runCLI(t, "compare", "1p3d-mlx5", "dp4", "--trace", big, "--out", out, "-q")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run 1p3d-mlx5: 1 of 2 requests")
	assert.Contains(t, err.Error(), "--set '*.*.kv_budget_tokens=0'", "compare's fix applies to P/D and fused scenarios alike")

	small := writeTrace(t, 1000, 2000)
	_, stderr, err := runCLI(t, "compare", "1p3d-mlx5", "--trace", small, "--seeds", "2", "--out", out, "-q")
	require.NoError(t, err)
	assert.Contains(t, stderr, "give identical runs")
	_, _, err = runCLI(t, "compare", "dp4", "1p3d-mlx5", "--trace", small, "--seeds", "2", "--out", out, "-q")
	require.Error(t, err, "the used run directory is found before dp4 runs")
	assert.Contains(t, err.Error(), "--force")
	_, err = os.Stat(filepath.Join(out, "runs", "dp4__trace=t__seed=1"))
	assert.True(t, os.IsNotExist(err), "dp4 did not run: %v", err)
}

// BenchmarkCheckFit is the preflight's read of a whole workload (the
// default scenario's generator, 384 requests) against the cluster.
func BenchmarkCheckFit(b *testing.B) {
	spec, err := loadSpec("", nil, nil, "")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		src, err := sourceOf(spec, false)
		require.NoError(b, err)
		fc, err := checkFit(spec, src)
		require.NoError(b, err)
		require.Equal(b, 384, fc.Requests)
	}
}

// TestPreflightKeepReplaysTheSameRequests: the source preflightKeep hands
// the run gives the requests, skipped-line count and warnings a fresh
// source gives; a workload over the bound is not kept (the run reads it
// again).
func TestPreflightKeepReplaysTheSameRequests(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		if i == 17 {
			b.WriteString(`{"timestamp": 1, "input_length": "x"}` + "\n") // skipped with --skip-bad
		}
		fmt.Fprintf(&b, `{"timestamp":%d,"input_length":%d,"output_length":%d,"hash_ids":[%d,%d]}`+"\n", i*700, 1024-i, 1+i%5, i%7, 50+i)
	}
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	require.NoError(t, os.WriteFile(trace, []byte(b.String()), 0o644))
	type row struct {
		id, arrival        int64
		session            int32
		in, out, turn, app int
		blocks             []uint64
		last               bool
	}
	drain := func(src workload.Source) (rows []row, skipped int, warnings []string) {
		for {
			r, err := src.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			rows = append(rows, row{r.ID, int64(r.Arrival), r.Session, r.InputLen, r.OutputLen, r.Turn, r.AppendLen, slices.Clone(r.Blocks), r.Last})
		}
		if s, ok := src.(workload.Skipper); ok {
			skipped = s.Skipped()
		}
		if w, ok := src.(workload.Warner); ok {
			warnings = w.Warnings()
		}
		return rows, skipped, warnings
	}
	for _, maxReq := range []int{0, 25} {
		spec, err := loadSpecTrace("1p3d-mlx5", nil, []string{fmt.Sprintf("workload.max_requests=%d", maxReq)}, "", trace)
		require.NoError(t, err)
		fresh, err := openSource(spec, true, true)
		require.NoError(t, err)
		wantRows, wantSkipped, wantWarn := drain(fresh)
		closeSource(fresh)

		fc, kept, err := preflightKeep(spec, true, true)
		require.NoError(t, err)
		require.NotNil(t, kept, "40 requests are kept")
		if maxReq == 0 {
			require.Equal(t, len(wantRows), fc.Requests)
		}
		require.NotEmpty(t, wantRows)
		gotRows, gotSkipped, gotWarn := drain(kept)
		closeSource(kept)
		assert.Equal(t, wantRows, gotRows, "max_requests %d", maxReq)
		assert.Equal(t, wantSkipped, gotSkipped)
		assert.Equal(t, wantWarn, gotWarn)
		assert.Equal(t, 1, gotSkipped, "the bad line is skipped once")
	}

	defer func(n int) { replayMax = n }(replayMax)
	spec, err := loadSpecTrace("1p3d-mlx5", nil, nil, "", trace)
	require.NoError(t, err)
	fc, kept, err := preflightKeep(spec, true, true)
	require.NoError(t, err)
	closeSource(kept)
	replayMax = fc.Requests - 1
	fc2, kept, err := preflightKeep(spec, true, true)
	require.NoError(t, err)
	assert.Nil(t, kept, "over the bound: read again")
	assert.Equal(t, fc.Requests, fc2.Requests, "and still counted whole")
}

// TestPreflightOfAGeneratorOverTheBound: once the preflight stops keeping
// a generated workload it reads only lengths (workload.Agentic's
// LengthsOnly), and counts what a pass over the whole workload counts.
func TestPreflightOfAGeneratorOverTheBound(t *testing.T) {
	defer func(n int) { replayMax = n }(replayMax)
	// Long prompts, so that some exceed the cluster's pool or context.
	spec, err := loadSpecTrace("1p3d-mlx5", map[string]string{"sessions": "40"}, []string{"workload.max_requests=900", "workload.generator.append_tokens=9000"}, "", "")
	require.NoError(t, err)
	fresh, err := openSource(spec, false, false)
	require.NoError(t, err)
	want, err := checkFit(spec, fresh)
	require.NoError(t, err)
	closeSource(fresh)
	require.Equal(t, 900, want.Requests)
	require.NotZero(t, want.Failing(), "some requests do not fit")
	replayMax = 100
	got, kept, err := preflightKeep(spec, false, false)
	require.NoError(t, err)
	assert.Nil(t, kept, "over the bound: generated again")
	assert.Equal(t, want, got)
}

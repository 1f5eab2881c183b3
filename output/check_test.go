package output_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// failedRun is a run in which 1,891 of 2,806 requests failed (the dp4 on
// Claude Code case of issue 11).
func failedRun() *actors.Result {
	var recs []metrics.Record
	for i := 0; i < 2806; i++ {
		r := metrics.Record{ID: int64(i), Mode: "Fused", TTFT: 1e6, E2E: 2e6, TPOT: -1}
		if i < 1891 {
			r.Failed, r.Reason, r.TTFT, r.E2E = true, "exceeds-kv-pool", -1, -1
		} else if i < 1900 {
			r.Failed, r.Reason, r.TTFT, r.E2E = true, "link: down", -1, -1
		}
		recs = append(recs, r)
	}
	return &actors.Result{Records: recs, Summary: metrics.Summarize(recs)}
}

func TestCheckFailedShare(t *testing.T) {
	res := failedRun()
	assert.Equal(t, 0.6771, res.Summary.Requests.FailedShare)
	err := output.Check(res, output.CheckOptions{MaxFailed: output.DefaultMaxFailed})
	require.Error(t, err)
	assert.Equal(t, output.ExitTooManyFailed, output.ExitCode(err))
	assert.Contains(t, err.Error(), "1900 of 2806 requests failed (67.7%): exceeds-kv-pool 1891, link: down 9")
	require.NotEmpty(t, res.Summary.Warnings)
	assert.Contains(t, res.Summary.Warnings[0], "exceeds-kv-pool 1891")

	assert.NoError(t, output.Check(res, output.CheckOptions{MaxFailed: 0.7}))
	assert.NoError(t, output.Check(res, output.CheckOptions{MaxFailed: -1}), "negative: no limit")

	// A healthy run of the default scenario passes the default check.
	ok := testkit.Run(t, scenarios.Default, topology.Options{})
	assert.NoError(t, output.Check(ok, output.CheckOptions{MaxFailed: output.DefaultMaxFailed}))
}

func TestCheckEmptyAndStrictWall(t *testing.T) {
	empty := &actors.Result{Summary: metrics.Summarize(nil)}
	err := output.Check(empty, output.CheckOptions{MaxFailed: output.DefaultMaxFailed})
	assert.Equal(t, output.ExitBadInput, output.ExitCode(err))
	assert.NoError(t, output.Check(empty, output.CheckOptions{AllowEmpty: true}))
	empty.Summary.Requests.SkippedBad = 7
	assert.Contains(t, output.Check(empty, output.CheckOptions{}).Error(), "all 7 records")

	res := &actors.Result{Summary: metrics.Summarize([]metrics.Record{{ID: 0, TTFT: 100e6, E2E: 200e6, TPOT: -1}})}
	res.Summary.Clock = metrics.Clock{Mode: "wall", TimeScale: 1000}
	metrics.JudgeWall(&res.Summary.Clock, []time.Duration{0, 20e6}, 1000, 0.9, res.Summary.TTFT.P50)
	require.Equal(t, metrics.FidelityDistorted, res.Summary.Clock.Fidelity)
	assert.NoError(t, output.Check(res, output.CheckOptions{}), "only --strict-wall fails a distorted run")
	err = output.Check(res, output.CheckOptions{StrictWall: true})
	assert.Equal(t, output.ExitWallFidelity, output.ExitCode(err))
	assert.Contains(t, err.Error(), "wall clock distorted at time-scale 1000")

	assert.Equal(t, 0, output.ExitCode(nil))
	assert.Equal(t, 1, output.ExitCode(errors.New("lost")))
	assert.Equal(t, 130, output.StopCode("SIGINT"))
	assert.Equal(t, 143, output.StopCode("SIGTERM"))
	assert.Equal(t, 1, output.StopCode("wall-timeout"))
}

func TestWriteRefusesAnotherRunAndForceClearsOnlyPdemuFiles(t *testing.T) {
	res := testkit.Run(t, "1p3d-tcp.hcl", topology.Options{})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
	require.NoError(t, output.Write(dir, res, output.WriteOptions{}), "a directory without a run is fine")
	first, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)

	// Another run into the same directory: refused, nothing touched.
	bad := &actors.Result{Summary: metrics.Summarize(nil)}
	err = output.Write(dir, bad, output.WriteOptions{})
	require.Error(t, err)
	assert.ErrorIs(t, err, output.ErrRunDir)
	assert.Equal(t, output.ExitBadInput, output.ExitCode(err))
	assert.Contains(t, err.Error(), "--force")
	again, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	assert.Equal(t, string(first), string(again))

	// A stale file of an older run version and a leftover temporary file.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".pdemu-tmp-per_request.csv-123"), []byte("x"), 0o644))
	require.NoError(t, output.Write(dir, bad, output.WriteOptions{Force: true}))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, append([]string{"notes.txt"}, output.Files...), names, "no temporary file left, notes.txt kept")
	b, _ := os.ReadFile(filepath.Join(dir, "notes.txt"))
	assert.Equal(t, "mine", string(b))
	s, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	assert.Contains(t, string(s), `"total": 0`)
	r, _ := os.ReadFile(filepath.Join(dir, "sessions.csv"))
	assert.Equal(t, "session,requests,direct,migrations,blacklists,fallbacks,rejections\n", string(r), "the old run's sessions are gone")
}

func TestWritePartialRunListsUnfinished(t *testing.T) {
	recs := []metrics.Record{
		{ID: 0, Session: "a", Mode: "Direct", TTFT: 5e6, E2E: 9e6, TPOT: -1, State: metrics.StateCompleted},
		{ID: 2, Session: "a", Mode: "Direct", TTFT: 5e6, E2E: 9e6, TPOT: -1, State: metrics.StateCompleted},
	}
	unf := []metrics.Record{{ID: 1, Session: "b", TTFT: -1, E2E: -1, TPOT: -1}, {ID: 3, Session: "c", TTFT: -1, E2E: -1, TPOT: -1}}
	res := &actors.Result{Records: recs, Unfinished: unf, Summary: metrics.Summarize(recs)}
	metrics.MarkPartial(&res.Summary, "SIGINT", len(unf))
	dir := t.TempDir()
	require.NoError(t, output.Write(dir, res, output.WriteOptions{}))
	b, err := os.ReadFile(filepath.Join(dir, "per_request.csv"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 5)
	for i, want := range []string{"completed", "unfinished", "completed", "unfinished"} {
		assert.True(t, strings.HasPrefix(lines[i+1], []string{"0,", "1,", "2,", "3,"}[i]), lines[i+1])
		assert.True(t, strings.HasSuffix(lines[i+1], ","+want+","), lines[i+1]) // then kv_cause
	}
	s, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	assert.Contains(t, string(s), `"partial": true`)
	assert.Contains(t, string(s), `"stopped_by": "SIGINT"`)
	assert.Contains(t, string(s), `"unfinished": 2`)
	assert.Contains(t, string(s), "partial run: stopped by SIGINT with 2 requests unfinished")
	assert.Equal(t, 130, output.StopCode(res.Summary.StoppedBy))
	assert.NoError(t, output.Check(res, output.CheckOptions{MaxFailed: output.DefaultMaxFailed}))
}

func TestPrintExplainShowsTheTail(t *testing.T) {
	res := testkit.Run(t, "claude-code.hcl", topology.Options{})
	var b strings.Builder
	output.PrintExplain(&b, res.Summary)
	output.PrintWarnings(&b, res.Summary)
	t.Log("\n" + b.String())
	// claude-code's p99 TTFT (its golden summary.json: 334716.201 ms since issue 10).
	assert.Contains(t, b.String(), "ttft tail 29 requests with ttft >= 334716.2 ms (p99)")
	assert.Contains(t, b.String(), "made mostly of p_queue")
}

// TestWriteBoundsInstances: a run whose emulated time is absurd (the
// issue's latency = "2562047h" case wrote 9.1 GB of instances.csv) writes
// at most metrics.MaxInstanceRows rows, and summary.json says the interval
// was widened.
func TestWriteBoundsInstances(t *testing.T) {
	s := metrics.NewSeries("d0", "decode")
	s.Observe(time.Hour, 5, 0, 1)
	res := &actors.Result{Series: []*metrics.Series{s, metrics.NewSeries("p0", "prefill")}, SampleInterval: time.Second,
		End: 2562047 * time.Hour, Summary: metrics.Summarize(nil)}
	dir := t.TempDir()
	require.NoError(t, output.Write(dir, res, output.WriteOptions{}))
	b, err := os.ReadFile(filepath.Join(dir, "instances.csv"))
	require.NoError(t, err)
	rows := strings.Count(string(b), "\n") - 1
	assert.LessOrEqual(t, rows, metrics.MaxInstanceRows)
	assert.Greater(t, rows, metrics.MaxInstanceRows/2)
	sum, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	assert.Contains(t, string(sum), `"instances_interval_widened": true`)
	assert.Contains(t, string(sum), fmt.Sprintf(`"instances_rows": %d`, rows))
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
)

// checkPartialDir: a stopped run's directory says partial, what stopped
// it, and lists every unfinished request in per_request.csv.
func checkPartialDir(t *testing.T, dir, by string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var s struct {
		Partial   bool   `json:"partial"`
		StoppedBy string `json:"stopped_by"`
		Requests  struct {
			Total      int `json:"total"`
			Completed  int `json:"completed"`
			Failed     int `json:"failed"`
			Unfinished int `json:"unfinished"`
		} `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(b, &s))
	assert.True(t, s.Partial)
	assert.Equal(t, by, s.StoppedBy)
	assert.Positive(t, s.Requests.Unfinished)
	assert.Equal(t, s.Requests.Total, s.Requests.Completed+s.Requests.Failed)
	rows, col := readPerRequest(t, dir, "state")
	n := map[string]int{}
	for _, r := range rows {
		n[r[col["state"]]]++
	}
	assert.Equal(t, s.Requests.Unfinished, n["unfinished"], "every unfinished request has a row")
	assert.Equal(t, s.Requests.Total+s.Requests.Unfinished, len(rows), "rows = total + unfinished = released")
}

func TestWallTimeoutWritesPartialOutputsExit1(t *testing.T) {
	dir := t.TempDir()
	_, stderr, err := runCLI(t, "run", "1p3d-tcp", "--var", "sessions=8", "--clock", "wall", "--time-scale", "2",
		"--wall-timeout", "1500ms", "--out", dir, "-q")
	require.Error(t, err)
	assert.Equal(t, 1, exitCodeOf(err))
	assert.Contains(t, stderr, "partial run: stopped by wall-timeout")
	checkPartialDir(t, dir, "wall-timeout")
}

func TestSignalWritesPartialOutputsExit130(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	time.AfterFunc(1500*time.Millisecond, func() { cancel(actors.StopCause("SIGINT")) })
	var out, errb bytes.Buffer
	err := run(ctx, []string{"run", "1p3d-tcp", "--var", "sessions=8", "--clock", "wall", "--time-scale", "2", "--out", dir, "-q"}, &out, &errb)
	require.Error(t, err)
	assert.Equal(t, 130, exitCodeOf(err))
	checkPartialDir(t, dir, "SIGINT")
}

func TestIdleFlagsWarn(t *testing.T) {
	_, stderr, err := runCLI(t, "run", "--time-scale", "3", "--max-requests", "5", "--out", t.TempDir(), "-q")
	require.NoError(t, err)
	assert.Contains(t, stderr, "--time-scale has no effect with the virtual clock")

	_, stderr, err = runCLI(t, "run", "--wall-timeout", "1h", "--strict-wall", "--skip-bad", "--max-requests", "5", "--out", t.TempDir(), "-q")
	require.NoError(t, err)
	assert.Contains(t, stderr, "--wall-timeout has no effect with the virtual clock")
	assert.Contains(t, stderr, "--strict-wall has no effect with the virtual clock")
	assert.Contains(t, stderr, "--skip-bad has no effect on a generated workload")

	_, stderr, err = runCLI(t, "run", "--clock", "wall", "--time-scale", "1000", "--max-requests", "3", "--out", t.TempDir(), "-q")
	require.NoError(t, err)
	assert.NotContains(t, stderr, "has no effect")

	trace := filepath.Join(t.TempDir(), "a.jsonl")
	_, stderr, err = runCLI(t, "trace", "gen", "--kind", "agentic", "--sessions", "2", "--requests", "3", "--out", trace)
	require.NoError(t, err)
	assert.Contains(t, stderr, "--requests has no effect with --kind agentic")

	_, stderr, err = runCLI(t, "run", "--trace", trace, "--seed", "7", "--max-requests", "5", "--out", t.TempDir(), "-q")
	require.NoError(t, err)
	assert.Contains(t, stderr, "--seed has no effect on this trace replay")
}

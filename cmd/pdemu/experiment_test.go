package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExperimentKVCPaperShort runs the short kvc-paper experiment through
// the CLI: the text report on stdout is report.txt's figures, report.md,
// report.json and the per-run directories are written, a second run into
// the same directory is refused before anything runs (exit 2) unless
// --force, and --json prints report.json.
func TestExperimentKVCPaperShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the short experiment (37 emulations)")
	}
	dir := filepath.Join(t.TempDir(), "kvc")
	stdout, stderr, err := runCLI(t, "experiment", "kvc-paper", "--short", "--out", dir, "--jobs", "2")
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, "published")
	assert.Contains(t, stdout, "verdict")
	assert.Contains(t, stderr, "runs done")
	txt, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, err)
	assert.Equal(t, string(txt), stdout, "stdout is report.txt")
	for _, f := range []string{"report.md", "report.json", "runs/v2-tcp-s1/summary.json", "runs/v2-tcp-dpsync/per_request.csv"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}

	_, _, err = runCLI(t, "experiment", "kvc-paper", "--short", "--out", dir, "-q")
	assert.Equal(t, 2, exitCode(err), "%v", err)
	assert.Contains(t, err.Error(), "--force")

	stdout, _, err = runCLI(t, "experiment", "kvc-paper", "--short", "--out", dir, "--force", "--json", "-q")
	require.NoError(t, err)
	var rep struct {
		Experiment string
		Figures    []struct{ Name, Verdict string }
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Equal(t, "kvc-paper", rep.Experiment)
	assert.NotEmpty(t, rep.Figures)
}

func TestExperimentBadFlagsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"experiment", "kvc-paper", "--seeds", "0"},
		{"experiment", "kvc-paper", "--jobs", "0"},
		{"experiment", "kvc-paper", "extra"},
		{"experiment", "kvc-papr"},
	} {
		_, _, err := runCLI(t, append(args, "--out", t.TempDir())...)
		assert.Equal(t, 2, exitCode(err), "%v: %v", args, err)
	}
}

// trace gen: --concurrency is --active-sessions' old name (the same
// trace); --client-cap leaves the trace alone and says how to apply it.
func TestTraceGenActiveSessionsAndClientCap(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, args ...string) (string, string) {
		p := filepath.Join(dir, name)
		_, stderr, err := runCLI(t, append([]string{"trace", "gen", "--requests", "400", "--sessions", "8", "--out", p}, args...)...)
		require.NoError(t, err)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return string(b), stderr
	}
	plain, _ := gen("plain.jsonl")
	old, _ := gen("old.jsonl", "--concurrency", "4")
	active, _ := gen("active.jsonl", "--active-sessions", "4")
	capped, stderr := gen("capped.jsonl", "--client-cap", "32")
	assert.Equal(t, old, active, "--concurrency = --active-sessions")
	assert.NotEqual(t, plain, active, "active sessions rewrite the timeline")
	assert.Equal(t, plain, capped, "the client cap is not part of the trace")
	assert.Contains(t, stderr, "--set workload.client_cap=32")

	_, _, err := runCLI(t, "trace", "gen", "--concurrency", "4", "--active-sessions", "8", "--out", filepath.Join(dir, "x"))
	assert.Equal(t, 2, exitCode(err))
}

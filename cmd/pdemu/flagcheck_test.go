package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoSilentFlagCoercion: every value that used to be coerced silently
// is bad input (exit 2), with the flag named.
func TestNoSilentFlagCoercion(t *testing.T) {
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--out", out, "--clock", "wall", "--time-scale", "NaN"}, "--time-scale must be a finite number"},
		{[]string{"run", "--out", out, "--clock", "wall", "--time-scale", "+Inf"}, "--time-scale must be a finite number"},
		{[]string{"run", "--out", out, "--clock", "wall", "--time-scale", "1e9"}, "--time-scale must be at most"},
		{[]string{"run", "--out", out, "--clock", "wall", "--time-scale", "-2"}, "--time-scale must be > 0"},
		{[]string{"serve", "--time-scale", "NaN"}, "--time-scale must be a finite number"},
		{[]string{"run", "--out", out, "--max-failed", "NaN"}, "--max-failed must be a finite number"},
		{[]string{"compare", "1p3d-mlx5", "--out", out, "--max-failed", "-Inf"}, "--max-failed must be a finite number"},
		{[]string{"run", "--out", out, "--max-failed", "1.5"}, "--max-failed is a share of the requests, at most 1"},
		{[]string{"run", "--out", out, "--set", "router.rho=0.5", "--set", "router.rho=0.6"}, "--set router.rho given twice"},
		{[]string{"run", "--out", out, "--var", "sessions=2", "--var", "sessions=3"}, "--var sessions given twice"},
		{[]string{"validate", "1p3d-mlx5", "--var", "sessions=2", "--var", "sessions=3"}, "--var sessions given twice"},
		{[]string{"run", "--out", ""}, "--out must name"},
		{[]string{"compare", "1p3d-mlx5", "--out", " "}, "--out must name"},
	} {
		_, _, err := runCLI(t, c.args...)
		require.Error(t, err, "%v", c.args)
		assert.Contains(t, err.Error(), c.want, "%v", c.args)
		assert.Equal(t, exitBadInput, exitCodeOf(err), "%v", c.args)
	}
	// Different paths and variables are fine.
	_, _, err := runCLI(t, "validate", "1p3d-mlx5", "--var", "sessions=2", "--var", "seed=3", "--set", "router.rho=0.5", "--set", "router.alpha=2")
	require.NoError(t, err)
}

// TestForceSaysWhenItReplacesAGoodRun: --force replacing a complete run
// with an unsuccessful one says so on stderr (the good run used to vanish
// silently).
func TestForceSaysWhenItReplacesAGoodRun(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runCLI(t, "run", "--out", dir, "-q", "--var", "sessions=4", "--max-requests", "30")
	require.NoError(t, err)
	_, stderr, err := runCLI(t, "run", "chaos", "--out", dir, "-q", "--max-requests", "100", "--force", "--set", "recovery.retry_budget=0")
	require.Error(t, err)
	assert.Contains(t, stderr, "--force replaced the complete run")
	// A failed run replaced by another is not news.
	_, stderr, err = runCLI(t, "run", "chaos", "--out", dir, "-q", "--max-requests", "100", "--force", "--set", "recovery.retry_budget=0")
	require.Error(t, err)
	assert.NotContains(t, stderr, "--force replaced")
}

// An empty trace is bad input for trace stats, as it is for run (it used
// to print a table of zeros and exit 0).
func TestTraceStatsEmptyTrace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "empty.jsonl")
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	_, _, err := runCLI(t, "trace", "stats", p, "--format", "mooncake")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the trace has no requests")
	assert.Equal(t, exitBadInput, exitCodeOf(err))
}

// ifChanged sets an override only for a flag the command line set, even
// to the flag's default value.
func TestIfChanged(t *testing.T) {
	fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
	seed := fl.Uint64("seed", 0, "")
	clock := fl.String("clock", "virtual", "")
	require.NoError(t, fl.Parse([]string{"--seed", "0"}))
	var o workloadOverrides
	ifChanged(fl, "seed", &o.seed, seed)
	ifChanged(fl, "clock", &o.clock, clock)
	require.NotNil(t, o.seed)
	assert.Zero(t, *o.seed)
	assert.Nil(t, o.clock)
}

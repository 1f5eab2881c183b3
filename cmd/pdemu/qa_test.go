package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQAReportBaselineExampleRuns runs report -h's --baseline example on the
// directory compare -h's first example writes (fewer requests): the baseline
// it names must be one of that compare's runs.
func TestQAReportBaselineExampleRuns(t *testing.T) {
	help, _, err := runCLI(t, "report", "-h")
	require.NoError(t, err)
	m := regexp.MustCompile(`pdemu report cmp --baseline (\S+)`).FindStringSubmatch(help)
	require.NotNil(t, m, "report -h has a --baseline example on cmp")
	chelp, _, err := runCLI(t, "compare", "-h")
	require.NoError(t, err)
	require.Contains(t, chelp, "pdemu compare 1p3d-mlx5 vanilla-pd-1p3d dp4 --out cmp")
	cmp := filepath.Join(t.TempDir(), "cmp")
	_, _, err = runCLI(t, "compare", "1p3d-mlx5", "vanilla-pd-1p3d", "dp4", "--max-requests", "20", "-q", "--out", cmp)
	require.NoError(t, err)
	_, _, err = runCLI(t, "report", cmp, "--baseline", m[1], "--out", filepath.Join(cmp, "report.html"))
	require.NoError(t, err, "report -h's example baseline %q", m[1])
}

// TestQATPTheModelCannotSplit: a tp the model's heads cannot be split over
// is a diagnostic at the attribute (exit 2), from a file and from --set; it
// was a runtime failure (exit 1) without file:line.
func TestQATPTheModelCannotSplit(t *testing.T) {
	shown, _, err := runCLI(t, "scenarios", "show", "1p3d-mlx5")
	require.NoError(t, err)
	src := strings.Replace(shown, "kv_budget_tokens = 92104", "tp = 3\n    kv_budget_tokens = 92104", 1)
	require.NotEqual(t, shown, src)
	file := filepath.Join(t.TempDir(), "tp3.hcl")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", file}, "tp3.hcl:"},
		{[]string{"run", "--set", "decode.*.tp=3", "--out", t.TempDir()}, "--set decode.*.tp=3:1:"},
	} {
		_, _, err := runCLI(t, c.args...)
		require.Error(t, err, "%v", c.args)
		assert.Equal(t, 2, exitCode(err), "%v: %v", c.args, err)
		assert.Contains(t, err.Error(), c.want)
		assert.Contains(t, err.Error(), `Invalid value for "tp"`)
		assert.Contains(t, err.Error(), "cannot be split over tp=3")
	}
	_, _, err = runCLI(t, "validate", "1p3d-mlx5", "--set", "decode.*.tp=2")
	require.NoError(t, err, "tp=2 splits the model")
}

// TestQACapacityBadSLOBeforeRound1: a malformed --slo is refused before
// capacity starts its first round (it was refused by every run of round 1,
// after the round's directory was made).
func TestQACapacityBadSLOBeforeRound1(t *testing.T) {
	for _, slo := range []string{"ttft=abc", "attainment=2"} {
		out := filepath.Join(t.TempDir(), "cap")
		_, stderr, err := runCLI(t, "capacity", "1p3d-mlx5", "--slo", slo, "--out", out)
		require.Error(t, err)
		assert.Equal(t, 2, exitCode(err), "%v", err)
		assert.Contains(t, err.Error(), "--slo")
		assert.NotContains(t, stderr, "round 1")
		_, statErr := os.Stat(filepath.Join(out, "round-1"))
		assert.True(t, os.IsNotExist(statErr), "no round-1 directory for --slo %s", slo)
	}
}

package main

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQABadFlagsExit2 collects bad flag values found in review that must be
// refused as bad input (exit 2), not as a runtime failure (exit 1).
func TestQABadFlagsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"models", "--mem-fraction", "2"},
		{"models", "--mem-fraction", "0"},
		{"models", "--mem-fraction", "NaN"},
		// 1p3d-mlx5 has 4 workers: a range of 2 ports cannot hold them
		// (was exit 1, "the port range is used up", after binding some).
		{"serve", "--endpoints", "workers", "--listen", "127.0.0.1:0", "--worker-ports", "9000-9001"},
		{"serve", "--endpoints", "workers", "--listen", "127.0.0.1:0", "--kv-events-ports", "9000-9002"},
	} {
		_, _, err := runCLI(t, args...)
		assert.Equal(t, 2, exitCode(err), "%v: %v", args, err)
	}
}

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

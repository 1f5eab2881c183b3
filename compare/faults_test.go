package compare_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/compare"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/report"
)

// TestChaosReportShowsFaults runs the shipped chaos scenario beside a run
// without faults and checks that the comparison gets its fault columns
// (0 for the run without), the chaos run's panel its fault table and its
// time-series plots the fault bands, and the other run none of them.
func TestChaosReportShowsFaults(t *testing.T) {
	runs := []report.Params{
		{Name: "chaos", Scenario: "chaos", Varied: []string{"scenario"}},
		{Name: "calm", Scenario: "1p3d-mlx5", Set: []string{"workload.sessions=3"}, MaxRequests: 40, Varied: []string{"scenario"}},
	}
	dir := t.TempDir()
	_, err := compare.Execute(context.Background(), runs, compare.Options{Out: dir, Jobs: 1, Load: testLoad})
	require.NoError(t, err)

	fcol, faults := testkit.ReadCSV(t, filepath.Join(compare.RunDir(dir, "chaos"), "faults.csv"))
	require.NotEmpty(t, faults, "the chaos scenario has faults")
	retried, failed := 0, 0
	for _, f := range faults {
		r, err := strconv.Atoi(f[fcol["retried"]])
		require.NoError(t, err)
		x, err := strconv.Atoi(f[fcol["failed"]])
		require.NoError(t, err)
		retried, failed = retried+r, failed+x
	}

	col, rows := testkit.ReadCSV(t, filepath.Join(dir, "compare.csv"))
	require.Len(t, rows, 2)
	for _, c := range report.FaultColumns {
		require.Contains(t, col, c)
	}
	assert.Equal(t, strconv.Itoa(len(faults)), rows[0][col["faults"]])
	assert.Equal(t, strconv.Itoa(retried), rows[0][col["retried"]])
	assert.Equal(t, strconv.Itoa(failed), rows[0][col["failed_by_faults"]])
	assert.Equal(t, []string{"0", "0", "0"}, []string{rows[1][col["faults"]], rows[1][col["retried"]], rows[1][col["failed_by_faults"]]})

	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	h := string(b)
	assert.Contains(t, h, "<th>failed_by_faults</th>", "fault columns in the HTML comparison table")
	assert.Equal(t, 1, strings.Count(h, "<h4>Faults</h4>"), "a fault table for the chaos run only")
	chaos, calm, ok := strings.Cut(h[strings.Index(h, `id="run-chaos"`):], `id="run-calm"`)
	require.True(t, ok)
	assert.Contains(t, chaos, "<h4>Faults</h4>")
	ftab := chaos[strings.Index(chaos, "<h4>Faults</h4>"):]
	ftab = ftab[:strings.Index(ftab, "</table>")]
	assert.Equal(t, len(faults), strings.Count(ftab, "<tr>")-1, "one table row per faults.csv row")
	assert.Contains(t, chaos, "Red bands")
	assert.NotContains(t, calm, "Red bands")

	// The band colour (faultShade) is drawn in the chaos run's KV plot only.
	kv, err := os.ReadFile(filepath.Join(dir, "plots", "chaos__kv.svg"))
	require.NoError(t, err)
	calmKV, err := os.ReadFile(filepath.Join(dir, "plots", "calm__kv.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(kv), bandMark)
	assert.NotContains(t, string(calmKV), bandMark)

	checkReport(t, dir)
}

// bandMark is how a fault band (report.faultShade) appears in the SVG.
const bandMark = "fill:#E05658;fill-opacity"

package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultsCSV has its columns out of docs/OUTPUTS.md's order, with an
// unknown one: the report reads them by name.
const faultsCSV = "recovery_ms,node,new_col,failed,at_ms,end_ms,id,kind,retried,detected_ms\n" +
	"1500,d1,q,2,200,600,0,crash,5,300\n" +
	",d0,q,1,800,,1,crash,3,\n"

func TestFaultsReadByName(t *testing.T) {
	dir := writeRun(t, false)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "faults.csv"), []byte(faultsCSV), 0o644))
	r, err := Load(dir)
	require.NoError(t, err)

	row, err := MakeRow(r)
	require.NoError(t, err)
	assert.Equal(t, &FaultCounts{Events: 2, Retried: 8, Failed: 3}, row.Faults)

	spans, err := faultSpans(r)
	require.NoError(t, err)
	assert.Equal(t, []faultSpan{{At: 0.2, End: 0.6}, {At: 0.8, End: -1}}, spans, "seconds; -1: never ended")

	h, rows := faultTable(r)
	assert.Equal(t, []string{"id", "kind", "node", "at_ms", "end_ms", "detected_ms", "retried", "failed", "recovery_ms"}, h,
		"docs/OUTPUTS.md order, only the columns present, unknown ones left out")
	assert.Equal(t, [][]string{
		{"0", "crash", "d1", "200", "600", "300", "5", "2", "1500"},
		{"1", "crash", "d0", "800", "never", "never", "3", "1", "never"},
	}, rows)

	var b bytes.Buffer
	require.NoError(t, WriteCSV(&b, []Row{row}))
	header := strings.SplitN(b.String(), "\n", 2)[0]
	assert.True(t, strings.HasSuffix(header, ",imbalance,faults,retried,failed_by_faults"), header)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(b.String()), ",2,8,3"), b.String())

	p, err := Build("t", "", []*Run{r})
	require.NoError(t, err)
	html := string(p.HTML)
	assert.Contains(t, html, "<h4>Faults</h4>")
	assert.Contains(t, html, "<th>failed_by_faults</th>")
	for _, f := range p.Figures {
		if strings.HasSuffix(f.ID, "__kv") || strings.HasSuffix(f.ID, "__queue") {
			assert.Contains(t, f.Caption, "Red bands", f.ID)
			assert.Equal(t, 2, strings.Count(string(f.SVG), "fill-opacity"), "%s: one band per fault, the unended one to the right edge", f.ID)
		}
	}
}

// Runs without faults (no faults.csv, or only its header) keep the old
// compare.csv header and an HTML page without fault table or bands.
func TestNoFaultsNoFaultColumns(t *testing.T) {
	for name, content := range map[string]string{"absent": "", "header only": "id,kind,at_ms,end_ms,retried,failed\n"} {
		t.Run(name, func(t *testing.T) {
			dir := writeRun(t, false)
			if content != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "faults.csv"), []byte(content), 0o644))
			}
			r, err := Load(dir)
			require.NoError(t, err)
			row, err := MakeRow(r)
			require.NoError(t, err)
			assert.Nil(t, row.Faults)
			var b bytes.Buffer
			require.NoError(t, WriteCSV(&b, []Row{row}))
			assert.Equal(t, strings.Join(CSVHeader(), ","), strings.SplitN(b.String(), "\n", 2)[0])
			b.Reset()
			require.NoError(t, WriteJSON(&b, []Row{row}))
			assert.NotContains(t, b.String(), `"faults"`)
			p, err := Build("t", "", []*Run{r})
			require.NoError(t, err)
			assert.NotContains(t, string(p.HTML), "Faults</h4>")
			assert.NotContains(t, string(p.HTML), "failed_by_faults")
			assert.NotContains(t, string(p.HTML), "fill-opacity")
		})
	}
}

// The Direct share plot of all runs shows bands only when every run has
// the same faults.
func TestSharedFaultsOnDirectShare(t *testing.T) {
	load := func(faults string) *Run {
		dir := writeRun(t, false)
		if faults != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "faults.csv"), []byte(faults), 0o644))
		}
		r, err := Load(dir)
		require.NoError(t, err)
		return r
	}
	other := "id,at_ms,end_ms\n0,100,400\n"
	for name, c := range map[string]struct {
		runs  []*Run
		bands int
	}{
		"same faults":        {[]*Run{load(faultsCSV), load(faultsCSV)}, 2},
		"one without faults": {[]*Run{load(faultsCSV), load("")}, 0},
		"different faults":   {[]*Run{load(faultsCSV), load(other)}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			fig, err := directShareFigure(c.runs)
			require.NoError(t, err)
			assert.Equal(t, c.bands, strings.Count(string(fig.SVG), "fill-opacity"))
			assert.Equal(t, c.bands > 0, strings.Contains(fig.Caption, "Red bands"))
		})
	}
}

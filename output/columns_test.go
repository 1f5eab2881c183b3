package output_test

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/metrics"
)

// TestPerRequestColumnsDocumented: the per_request.csv table of
// docs/OUTPUTS.md lists metrics.PerRequestColumns, the one list the
// header and every row come from: the same names, in the same order, with
// the same units.
func TestPerRequestColumnsDocumented(t *testing.T) {
	f, err := os.Open("../docs/OUTPUTS.md")
	require.NoError(t, err)
	defer f.Close()
	var doc [][2]string // name, unit
	in, table := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line[3:]) == "per_request.csv"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			table = false
			continue
		}
		if strings.HasPrefix(line, "| Field |") {
			table = true
			continue
		}
		cells := strings.Split(line, "|")
		if !table || len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		doc = append(doc, [2]string{strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])})
	}
	require.NoError(t, sc.Err())
	var cols [][2]string
	for _, c := range metrics.PerRequestColumns {
		cols = append(cols, [2]string{c.Name, c.Unit})
	}
	assert.Equal(t, cols, doc, "docs/OUTPUTS.md's per_request.csv table (Field, Unit) differs from metrics.PerRequestColumns")
	assert.Equal(t, len(metrics.PerRequestColumns), len(metrics.PerRequestHeader))
}

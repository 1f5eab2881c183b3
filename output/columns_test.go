package output_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pdemu/pdemu/metrics"
)

// TestPerRequestColumnsDocumented: the per_request.csv table of
// docs/OUTPUTS.md lists metrics.PerRequestColumns, the one list the
// header and every row come from: the same names, in the same order, with
// the same units, followed by the served runs' metrics.ClientColumns.
func TestPerRequestColumnsDocumented(t *testing.T) {
	var doc [][2]string // name, unit
	for _, row := range docTables(t)["per_request.csv"] {
		doc = append(doc, [2]string{row[0], row[1]})
	}
	var cols [][2]string
	for _, c := range metrics.PerRequestColumns {
		cols = append(cols, [2]string{c.Name, c.Unit})
	}
	for _, c := range metrics.ClientColumns {
		cols = append(cols, [2]string{c.Name, c.Unit})
	}
	assert.Equal(t, cols, doc, "docs/OUTPUTS.md's per_request.csv table (Field, Unit) differs from metrics.PerRequestColumns")
	assert.Equal(t, len(metrics.PerRequestColumns), len(metrics.PerRequestHeader))
}

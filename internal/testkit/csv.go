package testkit

import (
	"encoding/csv"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// ReadCSV reads the CSV file path whole: each column's index by its
// header name, and the rows after the header. The test fails on an I/O
// or CSV error, or on a file without a header.
func ReadCSV(t testing.TB, path string) (col map[string]int, rows [][]string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.NotEmpty(t, recs, "%s has a header", path)
	col = map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	return col, recs[1:]
}

package workload

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFormatTable: every format is one row (names and aliases unique,
// sorted), each loads a sample of its own format through both loaders,
// and no two formats share a loader (a format without its own row used to
// fall through to TraceLab's).
func TestFormatTable(t *testing.T) {
	gens := map[string]func(int) []byte{
		FormatAzure: genAzure, FormatBailian: genBailian, FormatClaudeCode: genClaudeCode,
		FormatMooncake: genMooncake, FormatTraceLab: genTraceLab,
	}
	names := Formats()
	require.True(t, slices.IsSorted(names), "Formats sorted")
	seen := map[string]string{}
	for _, f := range traceFormats {
		for _, n := range append([]string{f.name}, f.aliases...) {
			require.NotContains(t, seen, n, "%s: name or alias also of %s", f.name, seen[n])
			seen[n] = f.name
		}
	}
	dir := t.TempDir()
	byType := map[string]string{}
	for _, f := range names {
		gen, ok := gens[f]
		require.True(t, ok, "format %s has no sample generator in this test", f)
		data := gen(3)
		p := filepath.Join(dir, "t-"+f)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		src, err := Open(p, f, LoadOptions{})
		require.NoError(t, err, f)
		require.NotEmpty(t, drain(t, src), f)
		require.NoError(t, src.(io.Closer).Close())
		typ := fmt.Sprintf("%T", src)
		require.NotContains(t, byType, typ, "%s loads as %s, like %s", f, typ, byType[typ])
		byType[typ] = f

		rs, err := OpenReader(bytes.NewReader(data), "pipe", f, LoadOptions{})
		require.NoError(t, err, f)
		require.NotEmpty(t, drain(t, rs), f)
		got, ok := canonicalFormat(" " + f + " ")
		require.True(t, ok)
		require.Equal(t, f, got)
	}
	_, err := OpenReader(bytes.NewReader(nil), "pipe", "parquet", LoadOptions{})
	require.ErrorContains(t, err, `unknown trace format "parquet"`)
}

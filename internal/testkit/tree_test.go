package testkit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadTree(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "runs", "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "compare.csv"), []byte("x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runs", "a", "summary.json"), []byte("{}"), 0o644))
	assert.Equal(t, map[string][]byte{"compare.csv": []byte("x\n"), "runs/a/summary.json": []byte("{}")}, ReadTree(t, dir))
	assert.Empty(t, ReadTree(t, t.TempDir()), "an empty directory")
}

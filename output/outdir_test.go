//go:build unix

package output_test

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/output"
)

// inodes maps the files of dir to their inode numbers.
func inodes(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	m := map[string]uint64{}
	for _, e := range ents {
		fi, err := e.Info()
		require.NoError(t, err)
		m[e.Name()] = fi.Sys().(*syscall.Stat_t).Ino
	}
	return m
}

// A --force stream over a previous run writes the golden files, into the
// previous run's files (the same inodes), and leaves no temporary file.
func TestStreamForceRewritesPreviousFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inode numbers")
	}
	const name = "1p3d-tcp.hcl"
	dir := t.TempDir()
	if _, ok := streamInto(t, dir, name, output.StreamOptions{}); !ok {
		t.Skip("trace not on this machine")
	}
	before := inodes(t, dir)
	_, _ = streamInto(t, dir, name, output.StreamOptions{WriteOptions: output.WriteOptions{Force: true}})
	checkGolden(t, name, dir)
	assert.Equal(t, before, inodes(t, dir))
}

// Files that are not this run's alone are never rewritten: a hard link
// and a symbolic link are replaced by new files, their other names and
// targets keep their content.
func TestWriteForceSparesLinkedFiles(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	res := &actors.Result{Summary: metrics.Summarize(nil)}
	require.NoError(t, output.Write(dir, res, output.WriteOptions{}))
	hard, target := filepath.Join(other, "hard.csv"), filepath.Join(other, "target.csv")
	require.NoError(t, os.Remove(filepath.Join(dir, "sessions.csv")))
	require.NoError(t, os.WriteFile(hard, []byte("hard"), 0o644))
	require.NoError(t, os.Link(hard, filepath.Join(dir, "sessions.csv")))
	require.NoError(t, os.Remove(filepath.Join(dir, "faults.csv")))
	require.NoError(t, os.WriteFile(target, []byte("target"), 0o644))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "faults.csv")))

	require.NoError(t, output.Write(dir, res, output.WriteOptions{Force: true}))
	for f, want := range map[string]string{hard: "hard", target: "target"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.Equal(t, want, string(b))
	}
	fresh := t.TempDir()
	require.NoError(t, output.Write(fresh, res, output.WriteOptions{}))
	assert.Equal(t, digests(t, fresh), digests(t, dir), "the same files, no temporary file left")
	fi, err := os.Lstat(filepath.Join(dir, "faults.csv"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
}

// A --force run that writes fewer files (--outputs), or a stream closed
// before Write, leaves none of the previous run's files behind.
func TestForceDropsUnusedPreviousFiles(t *testing.T) {
	res := &actors.Result{Summary: metrics.Summarize(nil)}
	dir := t.TempDir()
	require.NoError(t, output.Write(dir, res, output.WriteOptions{}))
	require.NoError(t, output.Write(dir, res, output.WriteOptions{Force: true, Outputs: []string{"summary.json"}}))
	assert.Equal(t, []string{"summary.json"}, names(t, dir))

	require.NoError(t, output.Write(dir, res, output.WriteOptions{Force: true}))
	st, err := output.NewStream(dir, output.StreamOptions{WriteOptions: output.WriteOptions{Force: true}})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	assert.Empty(t, names(t, dir))
}

// names lists the files of dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

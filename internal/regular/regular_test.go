//go:build unix

package regular

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	f, err := Open(p)
	require.NoError(t, err)
	b := make([]byte, 2)
	n, _ := f.Read(b)
	require.Equal(t, 1, n)
	require.NoError(t, f.Close())

	// A FIFO without a writer: an error at once (os.Open blocks forever).
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err = Open(fifo)
	require.ErrorContains(t, err, "not a regular file (a FIFO)")
	_, err = Open(dir)
	require.ErrorContains(t, err, "not a regular file (a directory)")
	if _, e := os.Stat("/dev/zero"); e == nil {
		_, err = Open("/dev/zero")
		require.ErrorContains(t, err, "not a regular file (a character device)")
	}
	_, err = Open(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestReadAll(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte("12345"), 0o644))
	for _, tc := range []struct {
		limit int
		want  string
		over  bool
	}{{5, "12345", false}, {6, "12345", false}, {4, "", true}, {0, "", true}} {
		b, over, err := ReadAll(p, tc.limit)
		require.NoError(t, err)
		require.Equal(t, tc.over, over, "limit %d", tc.limit)
		require.Equal(t, tc.want, string(b), "limit %d", tc.limit)
	}
	_, over, err := ReadAll(dir, 10)
	require.ErrorContains(t, err, "not a regular file (a directory)")
	require.False(t, over)
}

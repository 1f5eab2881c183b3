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

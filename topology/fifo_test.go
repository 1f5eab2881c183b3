//go:build unix

package topology

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScenarioFIFORefused: a FIFO as the scenario or as an extends target
// is refused at once (open(2) used to block on it, deaf to SIGINT).
func TestScenarioFIFORefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.hcl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err := Load(fifo, testOpts)
	require.ErrorContains(t, err, "not a regular file (a FIFO)")
	ext := filepath.Join(dir, "ext.hcl")
	require.NoError(t, os.WriteFile(ext, []byte("extends = \"fifo.hcl\"\n"), 0o644))
	_, err = Load(ext, testOpts)
	require.ErrorContains(t, err, "not a regular file (a FIFO)")
	require.ErrorContains(t, err, "ext.hcl:1:")
}

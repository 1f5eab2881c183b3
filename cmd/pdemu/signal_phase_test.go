package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSignalBeforeTheRun: the first SIGINT ends a phase that does not
// watch the run's context: here reading a trace from a standard input
// that never ends (a writer that stays open). It exits 130 after
// signalGrace, saying no outputs were written, and writes none.
func TestSignalBeforeTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "pdemu")
	outb, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", outb)
	out := t.TempDir()
	cmd := exec.Command(bin, "run", "--trace", "-", "--out", out, "-q")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	_, err = stdin.Write([]byte(`{"timestamp": 0, "input_length": 100, "output_length": 5, "hash_ids": [1]}` + "\n"))
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // reading standard input, which never ends
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second): // a bound for the test only, not a timing assertion
		_ = cmd.Process.Kill()
		t.Fatal("the first SIGINT did not end the process")
	}
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 130, ee.ExitCode())
	assert.Contains(t, stderr.String(), "no outputs written")
	assert.NoFileExists(t, filepath.Join(out, "summary.json"))
}

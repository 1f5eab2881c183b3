package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The binary exits 130 on SIGINT and 143 on SIGTERM, after writing the
// outputs collected so far. A wall-clock run at real speed is still
// running when its first line appears, whatever the machine's speed.
func TestSignalsExitCodes(t *testing.T) {
	bin := buildPdemu(t) // skipped under -short
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(bin, "run", "--clock", "wall", "--time-scale", "1", "--out", out, "-q")
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(stdout).ReadString('\n')
			require.NoError(t, err)
			assert.Contains(t, line, "pdemu: scenario")
			require.NoError(t, cmd.Process.Signal(c.sig))
			err = cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, c.code, ee.ExitCode())
			assert.Contains(t, stderr.String(), "outputs written so far are partial")
			assert.FileExists(t, filepath.Join(out, "summary.json"))
		})
	}
}

// TestSignalBeforeTheRun: the first SIGINT ends a phase that does not
// watch the run's context: here reading a trace from a standard input
// that never ends (a writer that stays open). It exits 130 after
// signalGrace, saying no outputs were written, and writes none.
func TestSignalBeforeTheRun(t *testing.T) {
	bin := buildPdemu(t) // skipped under -short
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
	waitSignalHandler(t, cmd.Process.Pid) // then it is reading standard input, which never ends
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

// waitSignalHandler waits until process pid catches SIGINT (Linux: the
// SigCgt mask of /proc/PID/status), so that a signal sent next tests the
// program's handling, not the default action on a process still starting
// (a loaded machine can take longer than any fixed sleep).
func waitSignalHandler(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a bound for the test only
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Skipf("no /proc on this system: %v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if mask, ok := strings.CutPrefix(line, "SigCgt:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); err == nil && m&(1<<(int(syscall.SIGINT)-1)) != 0 {
					time.Sleep(50 * time.Millisecond) // past signal.Notify, into the phase
					return
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the process never installed its SIGINT handler")
}

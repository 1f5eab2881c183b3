package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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

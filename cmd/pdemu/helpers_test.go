package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Setup that the CLI tests repeat.

// buildPdemu builds the binary once per test.
func buildPdemu(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pdemu")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

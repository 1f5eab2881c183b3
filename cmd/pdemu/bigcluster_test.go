package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// big256 is 64p192d scaled to 256P768D: 196,608 links in full mesh.
func big256(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "256p768d.hcl")
	require.NoError(t, os.WriteFile(p, []byte(`extends = "<embedded>/64p192d.hcl"
name    = "256p768d"
variable "prefills" {
  default = 256
}
variable "decodes" {
  default = 768
}
`), 0o644))
	return p
}

// The shipped base builds a 256P768D full mesh (it used to stop at 65,536
// links with a wall of "Missing link"); --wall-timeout covers the build.
func TestBigClusterBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 196,608 links")
	}
	p := big256(t)
	stdout, _, err := runCLI(t, "validate", p)
	require.NoError(t, err)
	assert.Contains(t, stdout, "256 prefill, 768 decode, 0 fused, 196608 links")

	_, _, err = runCLI(t, "run", p, "--max-requests", "2", "-q", "--out", t.TempDir())
	require.NoError(t, err)

	_, _, err = runCLI(t, "run", p, "--clock", "wall", "--wall-timeout", "1ms", "-q", "--out", t.TempDir())
	require.Error(t, err)
	assert.Equal(t, 1, exitCode(err))
	assert.Contains(t, err.Error(), "did not build within 1ms (--wall-timeout covers the build)")
}

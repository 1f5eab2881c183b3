package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/topology"
)

// exitCode maps run's error to the process exit code main would use.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var de *topology.DiagError
	if errors.As(err, &de) {
		return 2
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestRunDefaultScenarioWritesOutputs(t *testing.T) {
	dir := t.TempDir()
	stdout, _, err := runCLI(t, "run", "--out", dir, "--var", "sessions=4", "--max-requests", "30")
	require.NoError(t, err)
	assert.Contains(t, stdout, "seed 42")
	assert.Contains(t, stdout, "requests  total 30  completed 30  failed 0")
	for _, f := range []string{"per_request.csv", "instances.csv", "summary.json"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		assert.Positive(t, st.Size(), f)
	}
}

func TestFlagsAfterFile(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runCLI(t, "run", "vanilla-pd-1p3d.hcl", "--out", dir, "--max-requests", "10", "-q")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"policy": "vanilla"`)
}

func TestMalformedHCLExits2WithFileLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	require.NoError(t, os.WriteFile(bad, []byte(`
prefill "p0" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}
decode "d0" {
  gpu = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
  kv_budget_tokens = -5
}
link "p0" "d9" {
  transport = "rdma"
  device = "mlx5_0"
  bandwidth = "200Gbps"
}
router "kvc" {
  tau_rejekt = 3
}
`), 0o644))
	for _, cmd := range []string{"validate", "run"} {
		_, _, err := runCLI(t, cmd, bad)
		require.Error(t, err, cmd)
		assert.Equal(t, 2, exitCode(err), cmd)
		msg := err.Error()
		assert.Contains(t, msg, "bad.hcl:9", cmd)  // kv_budget_tokens
		assert.Contains(t, msg, "bad.hcl:11", cmd) // unknown endpoint d9
		assert.Contains(t, msg, "bad.hcl:17", cmd) // misspelt tau_reject
		assert.Contains(t, msg, "Did you mean", cmd)
	}
}

func TestBadFlagsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--clock", "sundial"},
		{"run", "--time-scale", "-1"},
		{"run", "--max-requests", "-3"},
		{"run", "no-such-file.hcl"},
		{"frobnicate"},
		{"validate"},
	} {
		_, _, err := runCLI(t, args...)
		assert.Equal(t, 2, exitCode(err), "%v: %v", args, err)
	}
}

func TestValidateEmbeddedScenario(t *testing.T) {
	stdout, _, err := runCLI(t, "validate", "1p3d-tcp.hcl")
	require.NoError(t, err)
	assert.Contains(t, stdout, "ok")
}

func TestModels(t *testing.T) {
	stdout, _, err := runCLI(t, "models")
	require.NoError(t, err)
	assert.Contains(t, stdout, "qwen3-coder-30b-a3b")
}

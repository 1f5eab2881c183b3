package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pdemu show prints every attribute with its origin, and its HCL is a
// scenario on its own that runs exactly as the original does.
func TestShowIsTheEffectiveScenario(t *testing.T) {
	stdout, _, err := runCLI(t, "show", "1p3d-mlx5", "--set", "router.rho=0.9")
	require.NoError(t, err)
	for _, want := range []string{
		`kv_budget_tokens    = 92104 # hcl`,
		`kv_budget_tokens    = 717779 # derived: GPU memory`, // the prefill worker's pool
		`max_model_len       = 262144 # derived: the model preset's`,
		`rho                  = 0.9 # hcl`,
		`tau_append           = 8192 # default`,
		`epsilon              = 2 # hcl`,
		`max_rate   = "160Gbps" # derived: rdma's default`,
		`# effective_rate = 20.00 GB/s (derived: min(efficiency x bandwidth, max_rate); max_rate binds`,
		`ttft       = "10s" # default`,
	} {
		assert.Contains(t, stdout, want)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "shown.hcl")
	require.NoError(t, os.WriteFile(file, []byte(stdout), 0o644))
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	_, _, err = runCLI(t, "run", "1p3d-mlx5", "--set", "router.rho=0.9", "--max-requests", "80", "--out", a, "-q")
	require.NoError(t, err)
	_, _, err = runCLI(t, "run", file, "--max-requests", "80", "--out", b, "-q")
	require.NoError(t, err)
	for _, f := range []string{"per_request.csv", "instances.csv"} {
		x, err := os.ReadFile(filepath.Join(a, f))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, f))
		require.NoError(t, err)
		assert.Equal(t, string(x), string(y), "%s: the shown scenario runs as the original", f)
	}

	stdout, _, err = runCLI(t, "show", "dp4", "--json")
	require.NoError(t, err)
	var doc struct {
		Blocks []showBlock `json:"blocks"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.NotEmpty(t, doc.Blocks)
	assert.Equal(t, "fused", doc.Blocks[0].Type)
	origins := map[string]string{}
	for _, a := range doc.Blocks[0].Attrs {
		origins[a.Name] = a.Origin
	}
	assert.Equal(t, "hcl", origins["kv_budget_tokens"])
	assert.Equal(t, "derived", origins["max_model_len"])
	assert.Equal(t, "default", origins["tp"])
}

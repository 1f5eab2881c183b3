package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/gpu"
)

// base/pd.hcl points to 'pdemu gpus': it lists every preset.
func TestGPUsListsThePresets(t *testing.T) {
	stdout, _, err := runCLI(t, "gpus")
	require.NoError(t, err)
	for _, n := range gpu.GPUNames() {
		assert.Contains(t, stdout, n)
	}
	assert.Contains(t, stdout, "H200-SXM   989")
}

// A bandwidth above what the NIC's max_rate lets through is flagged by
// validate and run; the default 200 Gb/s (8 % above RDMA's ceiling) is not.
func TestBandwidthWithoutEffectWarns(t *testing.T) {
	_, stderr, err := runCLI(t, "validate", "1p3d-mlx5", "--set", "mesh.bandwidth=400Gbps")
	require.NoError(t, err)
	assert.Contains(t, stderr, "3 NICs (p0/mlx5_0, ...): bandwidth 400 Gb/s has no effect above 184 Gb/s")
	_, stderr, err = runCLI(t, "validate", "1p3d-mlx5")
	require.NoError(t, err)
	assert.NotContains(t, stderr, "has no effect")
	_, stderr, err = runCLI(t, "run", "--set", "mesh.bandwidth=800Gbps", "--max-requests", "5", "--out", t.TempDir(), "-q")
	require.NoError(t, err)
	assert.Contains(t, stderr, "bandwidth 800 Gb/s has no effect")
	_, stderr, err = runCLI(t, "run", "--set", "mesh.bandwidth=800Gbps", "--set", "mesh.max_rate=100GB/s", "--max-requests", "5", "--out", t.TempDir(), "-q")
	require.NoError(t, err)
	assert.NotContains(t, stderr, "has no effect", "max_rate raised: the bandwidth counts")
}

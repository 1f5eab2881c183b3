package scenarios_test

import (
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

func TestNames(t *testing.T) {
	names := scenarios.Names()
	assert.Equal(t, []string{"1p3d-mlx5.hcl", "1p3d-tcp.hcl", "vanilla-pd-1p3d.hcl"}, names)
	assert.Contains(t, names, scenarios.Default)
}

func TestRead(t *testing.T) {
	a, err := scenarios.Read("1p3d-mlx5.hcl")
	require.NoError(t, err)
	b, err := scenarios.Read("1p3d-mlx5")
	require.NoError(t, err)
	assert.Equal(t, a, b)

	_, err = scenarios.Read("nope.hcl")
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
	_, err = scenarios.Read("nope")
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
}

// Every embedded scenario must parse without diagnostics, even with preset
// checking on (the names below are the presets the scenarios use).
func TestEmbeddedScenariosParse(t *testing.T) {
	opts := topology.Options{
		KnownGPU:   func(n string) bool { return n == "H200-SXM" },
		KnownModel: func(n string) bool { return n == "qwen3-coder-30b-a3b" },
	}
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			src, err := scenarios.Read(name)
			require.NoError(t, err)
			spec, err := topology.Parse("<embedded>/"+name, src, opts)
			require.NoError(t, err)

			assert.Len(t, spec.Prefill, 1)
			assert.Len(t, spec.Decode, 3)
			assert.Empty(t, spec.Fused)
			assert.Len(t, spec.Links, 3)
			for _, d := range spec.Decode {
				assert.Equal(t, 92104, d.KVBudgetTokens)
				assert.Equal(t, "H200-SXM", d.GPU)
				assert.Equal(t, "qwen3-coder-30b-a3b", d.Model)
			}
			assert.Equal(t, topology.ClockVirtual, spec.Workload.Clock)
			assert.Equal(t, uint64(42), spec.Workload.Seed)
			assert.Empty(t, spec.Workload.Trace)
			assert.Equal(t, topology.DefaultGenerator(), spec.Workload.Generator)
		})
	}
}

func TestDefaultScenario(t *testing.T) {
	src, err := scenarios.Read(scenarios.Default)
	require.NoError(t, err)
	spec, err := topology.Parse("<embedded>/"+scenarios.Default, src, topology.Options{})
	require.NoError(t, err)
	assert.Equal(t, "1p3d-mlx5", spec.Name)
	want := topology.DefaultRouter("kvc")
	want.NetCapacity = true
	assert.Equal(t, want, spec.Router)
	for i, l := range spec.Links {
		assert.Equal(t, topology.TransportRDMA, l.Transport)
		assert.Equal(t, []string{"mlx5_0", "mlx5_1", "mlx5_2"}[i], l.Device)
		assert.Equal(t, 25e9, l.Bandwidth)
		assert.Equal(t, 10*time.Microsecond, l.Latency)
	}
}

func TestTCPScenario(t *testing.T) {
	src, err := scenarios.Read("1p3d-tcp.hcl")
	require.NoError(t, err)
	spec, err := topology.Parse("<embedded>/1p3d-tcp.hcl", src, topology.Options{})
	require.NoError(t, err)
	want := topology.DefaultRouter("kvc")
	want.NetCapacity = true
	assert.Equal(t, want, spec.Router)
	for _, l := range spec.Links {
		assert.Equal(t, topology.TransportTCP, l.Transport)
		assert.Equal(t, 25e9/8, l.Bandwidth)
		assert.Equal(t, 50*time.Microsecond, l.Latency)
	}
}

func TestVanillaScenario(t *testing.T) {
	src, err := scenarios.Read("vanilla-pd-1p3d.hcl")
	require.NoError(t, err)
	spec, err := topology.Parse("<embedded>/vanilla-pd-1p3d.hcl", src, topology.Options{})
	require.NoError(t, err)
	assert.Equal(t, topology.DefaultRouter("vanilla"), spec.Router)

	// Same cluster and workload as the default scenario.
	src, err = scenarios.Read(scenarios.Default)
	require.NoError(t, err)
	def, err := topology.Parse("<embedded>/"+scenarios.Default, src, topology.Options{})
	require.NoError(t, err)
	assert.Equal(t, def.Prefill, spec.Prefill)
	assert.Equal(t, def.Decode, spec.Decode)
	assert.Equal(t, def.Links, spec.Links)
	assert.Equal(t, def.Workload, spec.Workload)
}

func TestScenarioVarsOverride(t *testing.T) {
	src, err := scenarios.Read(scenarios.Default)
	require.NoError(t, err)
	spec, err := topology.Parse("<embedded>/"+scenarios.Default, src, topology.Options{
		Vars: map[string]string{"sessions": "52", "seed": "7"},
	})
	require.NoError(t, err)
	assert.Equal(t, 52, spec.Workload.Generator.Sessions)
	assert.Equal(t, uint64(7), spec.Workload.Seed)
}

package gpu

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mustLookup is lookup(name) of a name the catalog has (LookupGPU,
// LookupModel); a lookup error fails t.
func mustLookup[T any](t testing.TB, lookup func(string) (T, error), name string) T {
	t.Helper()
	v, err := lookup(name)
	require.NoError(t, err)
	return v
}

func mustGPU(t testing.TB, name string) GPU { t.Helper(); return mustLookup(t, LookupGPU, name) }

func TestCatalogSortedAndCopied(t *testing.T) {
	assert.True(t, slices.IsSorted(ModelNames()))
	assert.True(t, slices.IsSorted(GPUNames()))
	assert.Equal(t, []string{"deepseek-v3", "llama-3.1-70b", "llama-3.1-8b", "mixtral-8x7b",
		"qwen3-32b", "qwen3-8b", "qwen3-coder-30b-a3b"}, ModelNames())
	assert.Equal(t, []string{"A100-80GB", "B200", "H100-SXM", "H20", "H200-SXM", "H800"}, GPUNames())
	ms := Models()
	require.Len(t, ms, len(ModelNames()))
	for i, m := range ms {
		assert.Equal(t, ModelNames()[i], m.Name)
		assert.NotEmpty(t, m.Source, m.Name)
	}
	ms[0].Layers = 1
	gs := GPUs()
	gs[0].FLOPS = 1
	assert.NotEqual(t, 1, Models()[0].Layers, "Models returns a copy")
	assert.NotEqual(t, 1.0, GPUs()[0].FLOPS, "GPUs returns a copy")
	for _, g := range GPUs() {
		assert.NoError(t, g.Validate(), g.Name)
		assert.NotEmpty(t, g.Source, g.Name)
	}
}

// TestGPUSpecs pins the datasheet numbers of the brief / DESIGN.md §4.
func TestGPUSpecs(t *testing.T) {
	const gb = 1e9
	for _, c := range []struct {
		name         string
		flops, hbm   float64
		marketingMem float64 // datasheet "GB"
		interconnect float64
	}{
		{"H100-SXM", 989e12, 3.35e12, 80, 450e9},
		{"H200-SXM", 989e12, 4.8e12, 141, 450e9},
		{"H20", 148e12, 4.0e12, 96, 450e9},
		{"A100-80GB", 312e12, 2.039e12, 80, 300e9},
		{"B200", 2250e12, 8e12, 180, 900e9},
		{"H800", 989e12, 3.35e12, 80, 200e9},
	} {
		g := mustGPU(t, c.name)
		assert.Equal(t, c.flops, g.FLOPS, c.name)
		assert.Equal(t, c.hbm, g.HBMBandwidth, c.name)
		assert.Equal(t, c.interconnect, g.Interconnect, c.name)
		// The driver-reported total is within 8 % of the marketing figure
		// read as GB or GiB (H100: 81,559 MiB = 85.5 GB = 79.6 GiB).
		gib := g.Memory / (1 << 30)
		assert.True(t, math.Abs(gib/c.marketingMem-1) < 0.08 || math.Abs(g.Memory/gb/c.marketingMem-1) < 0.08,
			"%s memory %.1f GiB vs %g GB", c.name, gib, c.marketingMem)
	}
}

func TestLookupModel(t *testing.T) {
	for in, want := range map[string]string{
		"llama-3.1-8b":                      "llama-3.1-8b",
		"LLAMA-3.1-70B":                     "llama-3.1-70b",
		"meta-llama/Llama-3.1-8B-Instruct":  "llama-3.1-8b",
		"meta-llama/Meta-Llama-3.1-70B":     "llama-3.1-70b",
		"Qwen/Qwen3-Coder-30B-A3B-Instruct": "qwen3-coder-30b-a3b",
		" qwen3_8b ":                        "qwen3-8b",
		"deepseek-ai/DeepSeek-V3":           "deepseek-v3",
	} {
		m, err := LookupModel(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, m.Name, in)
	}
	_, err := LookupModel("qwen3-8")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrUnknown))
	assert.Contains(t, err.Error(), `did you mean "qwen3-8b"?`)
	for _, n := range ModelNames() {
		assert.Contains(t, err.Error(), n)
	}
	_, err = LookupModel("gpt-4")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "did you mean", "no far-fetched suggestion")
	assert.Contains(t, err.Error(), "qwen3-coder-30b-a3b")
	_, err = LookupModel("")
	assert.ErrorIs(t, err, ErrUnknown)
}

func TestLookupGPU(t *testing.T) {
	for in, want := range map[string]string{
		"H100-SXM": "H100-SXM", "h100": "H100-SXM", "H200": "H200-SXM", "a100": "A100-80GB",
		"h20": "H20", "b200": "B200", "H800": "H800", "h100_sxm": "H100-SXM",
	} {
		g, err := LookupGPU(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, g.Name, in)
	}
	_, err := LookupGPU("H2000")
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUnknown)
	assert.Contains(t, err.Error(), "did you mean")
	assert.Contains(t, err.Error(), "A100-80GB, B200, H100-SXM, H20, H200-SXM, H800")
}

func TestGPUValidate(t *testing.T) {
	g := mustGPU(t, "H100-SXM")
	g.FLOPS = 0
	assert.ErrorContains(t, g.Validate(), "flops")
	assert.ErrorContains(t, GPU{}.Validate(), "(unnamed)")
}

// Every preset states the context vLLM serves by default
// (max_position_embeddings); a few are pinned to their config.json.
func TestModelMaxModelLen(t *testing.T) {
	for _, m := range Models() {
		assert.Positive(t, m.MaxModelLen, m.Name)
	}
	for name, want := range map[string]int{"qwen3-coder-30b-a3b": 262_144, "llama-3.1-8b": 131_072, "qwen3-8b": 40_960} {
		m, err := LookupModel(name)
		require.NoError(t, err)
		assert.Equal(t, want, m.MaxModelLen, name)
	}
	bad := Models()[0]
	bad.MaxModelLen = -1
	assert.ErrorContains(t, bad.Validate(), "max_model_len")
}

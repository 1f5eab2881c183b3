package gpu

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pdemu/pdemu/internal/suggest"
)

// GPU describes one accelerator.
type GPU struct {
	// Name is the catalog key (e.g. "H100-SXM").
	Name string
	// FLOPS is the dense bf16 tensor-core peak, FLOP/s (no sparsity).
	FLOPS float64
	// HBMBandwidth is the peak device-memory bandwidth, bytes/s.
	HBMBandwidth float64
	// Memory is the device memory in bytes as the driver reports it
	// (nvidia-smi "Total", cudaMemGetInfo total). This is what SGLang's pool
	// formula starts from; it is a little below the marketing figure for
	// HBM3 parts (H100 "80 GB" = 81,559 MiB).
	Memory float64
	// Interconnect is the per-GPU, per-direction NVLink bandwidth in bytes/s
	// (half the bidirectional datasheet figure). It sets the bandwidth term
	// of tensor-parallel all-reduces.
	Interconnect float64
	// Source says where the numbers come from.
	Source string
}

// Validate checks that every quantity is a positive finite number.
func (g GPU) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{{"flops", g.FLOPS}, {"hbm_bandwidth", g.HBMBandwidth}, {"memory", g.Memory}, {"interconnect", g.Interconnect}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Errorf("%s must be a positive number, got %g", f.name, f.v))
		}
	}
	return invalid("GPU", g.Name, errs)
}

// invalid joins a catalog entry's problems into one error naming the
// entry, or returns nil when there are none (Model.Validate and
// GPU.Validate).
func invalid(kind, name string, errs []error) error {
	err := errors.Join(errs...)
	if err == nil {
		return nil
	}
	if name == "" {
		name = "(unnamed)"
	}
	return fmt.Errorf("gpu: invalid %s %s: %w", kind, name, err)
}

// ErrUnknown is wrapped by the errors of LookupModel and LookupGPU when a name
// is not in the catalog.
var ErrUnknown = errors.New("not in the catalog")

const mebibyte = 1 << 20

// modelCatalog is the model catalog, sorted by name. Parameter counts are exact
// sums over the architecture (they match the safetensors totals); a test
// recomputes them from the other fields.
var modelCatalog = []Model{
	{
		// deepseek-ai/DeepSeek-V3 config.json: 61 layers (first 3 dense), MLA
		// with kv_lora_rank 512, qk_rope_head_dim 64, qk_nope/v_head_dim 128,
		// q_lora_rank 1536; 256 routed experts top-8 + 1 shared, moe
		// intermediate 2048. Weights ship in FP8 (block-scaled e4m3); the
		// KV cache is bf16. 671B total / 37B active (without the 14B MTP module).
		Name:   "deepseek-v3",
		Source: "huggingface.co/deepseek-ai/DeepSeek-V3 config.json",
		Layers: 61, Hidden: 7168, Heads: 128, KVHeads: 128, HeadDim: 128,
		Intermediate: 18432, Vocab: 129280,
		Experts: 256, TopK: 8, MoEIntermediate: 2048, SharedExperts: 1, DenseLayers: 3,
		KVLoraRank: 512, QKRopeDim: 64, QLoraRank: 1536,
		Params: 671_026_404_352, ActiveParams: 37_552_282_624,
		BytesPerParam: 1, KVBytesPerElem: 2,
		MaxModelLen: 163_840,
	},
	{
		// meta-llama/Llama-3.1-70B(-Instruct) config.json.
		Name:   "llama-3.1-70b",
		Source: "huggingface.co/meta-llama/Llama-3.1-70B config.json",
		Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128,
		Intermediate: 28672, Vocab: 128256,
		Params: 70_553_706_496, ActiveParams: 70_553_706_496,
		BytesPerParam: 2, KVBytesPerElem: 2,
		MaxModelLen: 131_072,
	},
	{
		// meta-llama/Llama-3.1-8B(-Instruct) config.json.
		Name:   "llama-3.1-8b",
		Source: "huggingface.co/meta-llama/Llama-3.1-8B config.json",
		Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128,
		Intermediate: 14336, Vocab: 128256,
		Params: 8_030_261_248, ActiveParams: 8_030_261_248,
		BytesPerParam: 2, KVBytesPerElem: 2,
		MaxModelLen: 131_072,
	},
	{
		// mistralai/Mixtral-8x7B-v0.1 config.json: 32 layers, 8 experts
		// top-2 with intermediate 14336, GQA 32/8. Kept as a second MoE
		// data point (vLLM perf CI runs it).
		Name:   "mixtral-8x7b",
		Source: "huggingface.co/mistralai/Mixtral-8x7B-v0.1 config.json",
		Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128,
		Vocab:   32000,
		Experts: 8, TopK: 2, MoEIntermediate: 14336,
		Params: 46_702_792_704, ActiveParams: 12_879_925_248,
		BytesPerParam: 2, KVBytesPerElem: 2,
		MaxModelLen: 32_768,
	},
	{
		// Qwen/Qwen3-32B config.json (untied embeddings, q/k RMSNorm).
		Name:   "qwen3-32b",
		Source: "huggingface.co/Qwen/Qwen3-32B config.json",
		Layers: 64, Hidden: 5120, Heads: 64, KVHeads: 8, HeadDim: 128,
		Intermediate: 25600, Vocab: 151936,
		Params: 32_762_123_264, ActiveParams: 32_762_123_264,
		BytesPerParam: 2, KVBytesPerElem: 2,
		MaxModelLen: 40_960,
	},
	{
		// Qwen/Qwen3-8B config.json (untied embeddings, q/k RMSNorm).
		Name:   "qwen3-8b",
		Source: "huggingface.co/Qwen/Qwen3-8B config.json",
		Layers: 36, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128,
		Intermediate: 12288, Vocab: 151936,
		Params: 8_190_735_360, ActiveParams: 8_190_735_360,
		BytesPerParam: 2, KVBytesPerElem: 2,
		MaxModelLen: 40_960,
	},
	{
		// Qwen/Qwen3-Coder-30B-A3B-Instruct config.json: 48 layers, hidden
		// 2048, 32 query / 4 KV heads of 128, 128 experts top-8, moe
		// intermediate 768, all layers MoE. 30.5B total / 3.3B active.
		Name:   "qwen3-coder-30b-a3b",
		Source: "huggingface.co/Qwen/Qwen3-Coder-30B-A3B-Instruct config.json",
		Layers: 48, Hidden: 2048, Heads: 32, KVHeads: 4, HeadDim: 128,
		Vocab:   151936,
		Experts: 128, TopK: 8, MoEIntermediate: 768,
		Params: 30_532_122_624, ActiveParams: 3_353_032_704,
		BytesPerParam: 2, KVBytesPerElem: 2,
		MaxModelLen: 262_144,
	},
}

// gpuCatalog is the GPU catalog, sorted by name. FLOPS are dense bf16 (no
// sparsity), Memory is the driver-reported total (see GPU.Memory),
// Interconnect is half the bidirectional NVLink figure.
var gpuCatalog = []GPU{
	{
		// A100 SXM4 80GB datasheet: 312 TFLOPS bf16, 2,039 GB/s, NVLink
		// 600 GB/s; nvidia-smi total 81,920 MiB.
		Name: "A100-80GB", FLOPS: 312e12, HBMBandwidth: 2.039e12,
		Memory: 81920 * mebibyte, Interconnect: 300e9,
		Source: "NVIDIA A100 datasheet",
	},
	{
		// HGX/DGX B200: 2.25 PFLOPS dense bf16, 8 TB/s, NVLink 5 1.8 TB/s;
		// shipped as "180 GB" (DGX B200: 1,440 GB for 8), nvidia-smi total
		// 183,359 MiB.
		Name: "B200", FLOPS: 2250e12, HBMBandwidth: 8e12,
		Memory: 183359 * mebibyte, Interconnect: 900e9,
		Source: "NVIDIA DGX B200 datasheet",
	},
	{
		// H100 SXM5 datasheet: 989 TFLOPS dense bf16, 3.35 TB/s, NVLink
		// 900 GB/s; nvidia-smi total 81,559 MiB.
		Name: "H100-SXM", FLOPS: 989e12, HBMBandwidth: 3.35e12,
		Memory: 81559 * mebibyte, Interconnect: 450e9,
		Source: "NVIDIA H100 datasheet",
	},
	{
		// H20 (China SKU): 148 TFLOPS dense bf16, 4.0 TB/s, 96 GB HBM3,
		// NVLink 900 GB/s; nvidia-smi total 97,871 MiB.
		Name: "H20", FLOPS: 148e12, HBMBandwidth: 4.0e12,
		Memory: 97871 * mebibyte, Interconnect: 450e9,
		Source: "NVIDIA H20 product brief",
	},
	{
		// H200 SXM datasheet: 989 TFLOPS dense bf16, 4.8 TB/s, 141 GB,
		// NVLink 900 GB/s; nvidia-smi total 143,771 MiB.
		Name: "H200-SXM", FLOPS: 989e12, HBMBandwidth: 4.8e12,
		Memory: 143771 * mebibyte, Interconnect: 450e9,
		Source: "NVIDIA H200 datasheet",
	},
	{
		// H800 SXM (China SKU): H100 compute and memory, NVLink cut to
		// 400 GB/s; nvidia-smi total 81,559 MiB (Mooncake reports "81GB").
		Name: "H800", FLOPS: 989e12, HBMBandwidth: 3.35e12,
		Memory: 81559 * mebibyte, Interconnect: 200e9,
		Source: "NVIDIA H800 datasheet",
	},
}

// gpuAliases maps a few common short names to catalog names (both folded).
var gpuAliases = map[string]string{
	"h100":      "h100-sxm",
	"h100-sxm5": "h100-sxm",
	"h200":      "h200-sxm",
	"a100":      "a100-80gb",
	"a100-sxm":  "a100-80gb",
	"h800-sxm":  "h800",
	"h20-96gb":  "h20",
}

// nameSeparators reads '_' and ' ' as '-' (foldName; one Replacer for the
// process: building one per lookup was ~57 allocations per run).
var nameSeparators = strings.NewReplacer("_", "-", " ", "-")

// foldName normalises a user-supplied name: case-insensitive, '_' and ' '
// read as '-', and for models an "org/" prefix, a "meta-" prefix and an
// "-instruct" suffix are ignored, so Hugging Face repository names work.
func foldName(s string, model bool) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = nameSeparators.Replace(s)
	if model {
		if i := strings.LastIndexByte(s, '/'); i >= 0 {
			s = s[i+1:]
		}
		s = strings.TrimPrefix(s, "meta-")
		s = strings.TrimSuffix(s, "-instruct")
	}
	return s
}

// LookupModel returns the catalog model with the given name. Matching is
// case-insensitive and accepts Hugging Face repository names
// ("Qwen/Qwen3-Coder-30B-A3B-Instruct"). An unknown name yields an error
// wrapping ErrUnknown that suggests the closest name and lists all of them.
func LookupModel(name string) (Model, error) {
	key := foldName(name, true)
	for _, m := range modelCatalog {
		if m.Name == key {
			return m, nil
		}
	}
	return Model{}, unknownError("model", name, key, ModelNames())
}

// LookupGPU returns the catalog GPU with the given name, case-insensitively
// ("h100" and "H100-SXM" both work). An unknown name yields an error wrapping
// ErrUnknown that suggests the closest name and lists all of them.
func LookupGPU(name string) (GPU, error) {
	key := foldName(name, false)
	if a, ok := gpuAliases[key]; ok {
		key = a
	}
	for _, g := range gpuCatalog {
		if strings.ToLower(g.Name) == key {
			return g, nil
		}
	}
	return GPU{}, unknownError("GPU", name, key, GPUNames())
}

// Models returns a copy of the model catalog, sorted by name.
func Models() []Model { return slices.Clone(modelCatalog) }

// GPUs returns a copy of the GPU catalog, sorted by name.
func GPUs() []GPU { return slices.Clone(gpuCatalog) }

// ModelNames returns the catalog model names, sorted.
func ModelNames() []string {
	out := make([]string, len(modelCatalog))
	for i, m := range modelCatalog {
		out[i] = m.Name
	}
	return out
}

// GPUNames returns the catalog GPU names, sorted.
func GPUNames() []string {
	out := make([]string, len(gpuCatalog))
	for i, g := range gpuCatalog {
		out[i] = g.Name
	}
	return out
}

// unknownError builds the "unknown X" error with a did-you-mean hint:
// only for plausible typos, at most a third of the name changed
// (suggest.Third).
func unknownError(kind, name, key string, known []string) error {
	hint := ""
	if best := suggest.Nearest(key, known, suggest.Third); best != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Errorf("gpu: unknown %s %q%s; known: %s: %w",
		kind, name, hint, strings.Join(known, ", "), ErrUnknown)
}

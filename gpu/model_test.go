package gpu

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustModel(t testing.TB, name string) Model { t.Helper(); return mustLookup(t, LookupModel, name) }

// TestKVBytesPerToken checks the bf16 KV sizes of DESIGN.md §4:
// 2·layers·kv_heads·head_dim·2 for GQA, (kv_lora_rank+rope)·layers·2 for MLA.
func TestKVBytesPerToken(t *testing.T) {
	for _, c := range []struct {
		model string
		want  int64
	}{
		{"llama-3.1-8b", 131_072},       // 2·32·8·128·2
		{"llama-3.1-70b", 327_680},      // 2·80·8·128·2
		{"qwen3-32b", 262_144},          // 2·64·8·128·2
		{"qwen3-8b", 147_456},           // 2·36·8·128·2
		{"deepseek-v3", 70_272},         // (512+64)·61·2
		{"qwen3-coder-30b-a3b", 98_304}, // 2·48·4·128·2
		{"mixtral-8x7b", 131_072},       // 2·32·8·128·2
	} {
		m := mustModel(t, c.model)
		assert.Equal(t, c.want, m.KVBytesPerToken(1), c.model)
		assert.Equal(t, c.want, m.KVBytesPerTokenPerGPU(1), c.model)
	}
}

// TestQwen3_8BKVAt32K: 32,768 tokens of Qwen3-8B KV are exactly 4.5 GiB
// (Mooncake's vLLM benchmark moves "4.50 GB" for a 32K prompt).
func TestQwen3_8BKVAt32K(t *testing.T) {
	m := mustModel(t, "qwen3-8b")
	assert.Equal(t, int64(4.5*(1<<30)), m.KVBytesPerToken(1)*32768)
}

func TestKVBytesPerTokenTP(t *testing.T) {
	llama := mustModel(t, "llama-3.1-8b") // 8 KV heads
	for _, tp := range []int{1, 2, 4, 8} {
		assert.Equal(t, int64(131_072), llama.KVBytesPerToken(tp), "heads are split for tp=%d", tp)
		assert.Equal(t, int64(131_072/tp), llama.KVBytesPerTokenPerGPU(tp), "tp=%d", tp)
	}
	// tp=16 > 8 KV heads: each rank stores one head, so each head is held
	// twice and the worker stores and ships twice the tp=1 bytes.
	assert.Equal(t, 1, llama.KVHeadsPerGPU(16))
	assert.Equal(t, int64(16_384), llama.KVBytesPerTokenPerGPU(16))
	assert.Equal(t, int64(262_144), llama.KVBytesPerToken(16))

	coder := mustModel(t, "qwen3-coder-30b-a3b") // 4 KV heads
	assert.Equal(t, int64(98_304), coder.KVBytesPerToken(4))
	assert.Equal(t, int64(2*98_304), coder.KVBytesPerToken(8))

	ds := mustModel(t, "deepseek-v3") // MLA: replicated latent, never split
	for _, tp := range []int{1, 8, 16} {
		assert.Equal(t, int64(70_272), ds.KVBytesPerToken(tp))
		assert.Equal(t, int64(70_272), ds.KVBytesPerTokenPerGPU(tp))
	}
	// tp < 1 reads as 1 instead of panicking.
	assert.Equal(t, int64(131_072), llama.KVBytesPerToken(0))
	assert.Equal(t, int64(131_072), llama.KVBytesPerTokenPerGPU(-3))
}

// archParams recomputes the parameter counts from the architecture fields:
// attention (with q/k norms for Qwen3, low-rank projections for MLA), dense
// or MoE MLPs with router and shared experts, RMSNorms, embedding and LM head.
func archParams(m Model) (total, active float64) {
	h := float64(m.Hidden)
	var attn float64
	if m.IsMLA() {
		nh, ql, kl, rope := float64(m.Heads), float64(m.QLoraRank), float64(m.KVLoraRank), float64(m.QKRopeDim)
		d := float64(m.HeadDim)
		attn = h*ql + ql + ql*nh*(d+rope) + h*(kl+rope) + kl + kl*nh*(d+d) + nh*d*h
	} else {
		q := float64(m.Heads * m.HeadDim)
		kv := float64(m.KVHeads * m.HeadDim)
		attn = h*q + 2*h*kv + q*h
		if m.Vocab == 151936 { // Qwen3: q_norm and k_norm per head_dim
			attn += 2 * float64(m.HeadDim)
		}
	}
	perLayer := attn + 2*h // two RMSNorms
	L := float64(m.Layers)
	emb := m.embeddingParams()
	if !m.TiedEmbeddings {
		emb *= 2
	}
	if !m.IsMoE() {
		total = L*(perLayer+3*h*float64(m.Intermediate)) + emb + h
		return total, total
	}
	dense := float64(m.DenseLayers)
	moe := L - dense
	exp := m.expertParams()
	shared := float64(m.SharedExperts) * exp
	router := h * float64(m.Experts)
	base := L*perLayer + dense*3*h*float64(m.Intermediate) + moe*(shared+router) + emb + h
	total = base + moe*float64(m.Experts)*exp
	active = base + moe*float64(m.TopK)*exp
	return total, active
}

// TestParamsMatchArchitecture ties Params/ActiveParams to the architecture
// (the catalog stores the exact sums; published totals are 8.03B, 70.6B,
// 8.19B, 32.8B, 30.5B/3.3B, 671B/37B, 46.7B/12.9B).
func TestParamsMatchArchitecture(t *testing.T) {
	for _, m := range Models() {
		total, active := archParams(m)
		assert.Equal(t, m.Params, total, "%s total", m.Name)
		assert.Equal(t, m.ActiveParams, active, "%s active", m.Name)
	}
}

func TestModelValidate(t *testing.T) {
	for _, m := range Models() {
		require.NoError(t, m.Validate(), m.Name)
	}
	good := mustModel(t, "qwen3-coder-30b-a3b")
	for name, mut := range map[string]func(*Model){
		"zero layers":       func(m *Model) { m.Layers = 0 },
		"heads not mult":    func(m *Model) { m.KVHeads = 5 },
		"topk > experts":    func(m *Model) { m.TopK = 200 },
		"negative params":   func(m *Model) { m.Params = -1 },
		"active > total":    func(m *Model) { m.ActiveParams = 2 * m.Params },
		"experts too big":   func(m *Model) { m.Params = 1e9 },
		"rope without mla":  func(m *Model) { m.QKRopeDim = 64 },
		"zero bytes":        func(m *Model) { m.BytesPerParam = 0 },
		"dense layers >= L": func(m *Model) { m.DenseLayers = m.Layers },
	} {
		m := good
		mut(&m)
		err := m.Validate()
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "qwen3-coder-30b-a3b", name)
	}
	dense := mustModel(t, "llama-3.1-8b")
	dense.TopK = 2
	assert.Error(t, dense.Validate(), "MoE field on a dense model")
	assert.Contains(t, Model{}.Validate().Error(), "(unnamed)")
}

func TestValidTP(t *testing.T) {
	llama := mustModel(t, "llama-3.1-8b")
	for _, tp := range []int{1, 2, 4, 8, 16, 32} {
		assert.NoError(t, llama.ValidTP(tp), "tp=%d", tp)
	}
	for _, tp := range []int{0, -1, 3, 6, 64} {
		assert.Error(t, llama.ValidTP(tp), "tp=%d", tp)
	}
	coder := mustModel(t, "qwen3-coder-30b-a3b") // 4 KV heads, 32 heads
	assert.NoError(t, coder.ValidTP(8))
	assert.Error(t, coder.ValidTP(6))
	ds := mustModel(t, "deepseek-v3")
	assert.NoError(t, ds.ValidTP(16))
	assert.Error(t, ds.ValidTP(3))
}

func TestExpectedExpertsTouched(t *testing.T) {
	m := mustModel(t, "qwen3-coder-30b-a3b")
	assert.Equal(t, 0.0, m.ExpectedExpertsTouched(0))
	assert.Equal(t, 0.0, m.ExpectedExpertsTouched(-5))
	assert.InDelta(t, 8, m.ExpectedExpertsTouched(1), 1e-9)
	// 32 tokens · top-8 of 128: 128·(1 − (15/16)^32) ≈ 111.8.
	assert.InDelta(t, 111.78, m.ExpectedExpertsTouched(32), 0.01)
	assert.Equal(t, 128.0, m.ExpectedExpertsTouched(1<<20))
	prev := 0.0
	for n := int64(0); n <= 4096; n++ {
		e := m.ExpectedExpertsTouched(n)
		require.GreaterOrEqual(t, e, prev, "n=%d", n)
		require.LessOrEqual(t, e, 128.0)
		prev = e
	}
	assert.Equal(t, 0.0, mustModel(t, "llama-3.1-8b").ExpectedExpertsTouched(100))
}

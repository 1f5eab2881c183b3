package gpu

import (
	"errors"
	"fmt"
	"math"
)

// Model holds the architecture parameters of a transformer that the cost
// model needs. Field names follow the Hugging Face config.json keys where one
// exists (num_hidden_layers, hidden_size, ...). Values are for one model
// replica; tensor parallelism is applied by the functions that take tp.
type Model struct {
	// Name is the catalog key, lower case (e.g. "llama-3.1-8b").
	Name string
	// Source says where the numbers come from (config.json of a model repo).
	Source string

	// Layers is num_hidden_layers.
	Layers int
	// Hidden is hidden_size.
	Hidden int
	// Heads is num_attention_heads (query heads).
	Heads int
	// KVHeads is num_key_value_heads (GQA). For MLA models it equals Heads
	// and is not used for the KV size.
	KVHeads int
	// HeadDim is head_dim; for MLA it is qk_nope_head_dim (= v_head_dim).
	HeadDim int
	// Intermediate is intermediate_size of the dense MLP (dense models and
	// the leading dense layers of MoE models).
	Intermediate int
	// Vocab is vocab_size.
	Vocab int
	// TiedEmbeddings is tie_word_embeddings: the LM head reuses the input
	// embedding table.
	TiedEmbeddings bool

	// Experts is the number of routed experts per MoE layer (0 = dense).
	Experts int
	// TopK is num_experts_per_tok.
	TopK int
	// MoEIntermediate is moe_intermediate_size (per expert).
	MoEIntermediate int
	// SharedExperts is the number of always-active shared experts per MoE
	// layer (n_shared_experts; DeepSeek).
	SharedExperts int
	// DenseLayers is the number of leading layers of an MoE model that use a
	// dense MLP instead of experts (first_k_dense_replace; DeepSeek).
	DenseLayers int

	// KVLoraRank is kv_lora_rank for multi-head latent attention (MLA,
	// DeepSeek); 0 means GQA/MHA.
	KVLoraRank int
	// QKRopeDim is qk_rope_head_dim (MLA only).
	QKRopeDim int
	// QLoraRank is q_lora_rank (MLA only; 0 if queries are not compressed).
	QLoraRank int

	// Params is the total parameter count (all experts, embeddings).
	Params float64
	// ActiveParams is the number of parameters used per token (shared
	// weights, TopK routed experts, embedding table and LM head).
	ActiveParams float64
	// BytesPerParam is the weight storage size: 2 for bf16, 1 for fp8.
	BytesPerParam float64
	// KVBytesPerElem is the KV-cache element size: 2 for bf16, 1 for fp8.
	KVBytesPerElem float64

	// MaxModelLen is the context length vLLM serves by default:
	// config.json's max_position_embeddings (vLLM's max_model_len when the
	// flag is not given). A request whose prompt plus output tokens exceed
	// it is refused before scheduling (ReasonExceedsContext). 0 = not
	// checked. A deployment that extends the context (YaRN rope scaling)
	// states it per worker (topology: max_model_len).
	MaxModelLen int
}

// IsMLA reports whether the model uses multi-head latent attention.
func (m Model) IsMLA() bool { return m.KVLoraRank > 0 }

// IsMoE reports whether the model has routed experts.
func (m Model) IsMoE() bool { return m.Experts > 0 }

// Validate checks that the architecture is complete and self-consistent.
func (m Model) Validate() error {
	var errs []error
	pos := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be > 0, got %d", name, v))
		}
	}
	pos("layers", m.Layers)
	pos("hidden", m.Hidden)
	pos("heads", m.Heads)
	pos("kv_heads", m.KVHeads)
	pos("head_dim", m.HeadDim)
	pos("vocab", m.Vocab)
	if m.KVHeads > 0 && m.Heads > 0 && m.Heads%m.KVHeads != 0 {
		errs = append(errs, fmt.Errorf("heads (%d) must be a multiple of kv_heads (%d)", m.Heads, m.KVHeads))
	}
	if m.IsMoE() {
		pos("top_k", m.TopK)
		pos("moe_intermediate", m.MoEIntermediate)
		if m.TopK > m.Experts {
			errs = append(errs, fmt.Errorf("top_k (%d) exceeds experts (%d)", m.TopK, m.Experts))
		}
		if m.DenseLayers < 0 || m.DenseLayers >= m.Layers {
			errs = append(errs, fmt.Errorf("dense_layers (%d) must be in [0, layers)", m.DenseLayers))
		}
		if m.DenseLayers > 0 {
			pos("intermediate", m.Intermediate)
		}
	} else {
		pos("intermediate", m.Intermediate)
		if m.TopK != 0 || m.MoEIntermediate != 0 || m.SharedExperts != 0 || m.DenseLayers != 0 {
			errs = append(errs, errors.New("MoE fields set on a dense model (experts = 0)"))
		}
	}
	if m.IsMLA() && m.QKRopeDim <= 0 {
		errs = append(errs, fmt.Errorf("qk_rope_dim must be > 0 for MLA, got %d", m.QKRopeDim))
	}
	if !m.IsMLA() && (m.QKRopeDim != 0 || m.QLoraRank != 0) {
		errs = append(errs, errors.New("qk_rope_dim/q_lora_rank set without kv_lora_rank"))
	}
	posF := func(name string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("%s must be a positive number, got %g", name, v))
		}
	}
	if m.MaxModelLen < 0 {
		errs = append(errs, fmt.Errorf("max_model_len must be >= 0 (0 = not checked), got %d", m.MaxModelLen))
	}
	posF("params", m.Params)
	posF("active_params", m.ActiveParams)
	posF("bytes_per_param", m.BytesPerParam)
	posF("kv_bytes_per_elem", m.KVBytesPerElem)
	if m.ActiveParams > m.Params {
		errs = append(errs, fmt.Errorf("active_params (%g) exceeds params (%g)", m.ActiveParams, m.Params))
	}
	if m.Params > 0 && m.RoutedExpertParams() >= m.Params {
		errs = append(errs, fmt.Errorf("routed expert parameters (%g) exceed params (%g)", m.RoutedExpertParams(), m.Params))
	}
	return invalid("model", m.Name, errs)
}

// ValidTP reports whether the model can be split over tp tensor-parallel
// ranks the way vLLM and SGLang split it: query heads evenly, and KV heads
// either evenly (tp <= KVHeads) or replicated (tp a multiple of KVHeads).
// MLA models only need the query heads to divide.
func (m Model) ValidTP(tp int) error {
	if tp < 1 {
		return fmt.Errorf("gpu: tensor parallelism must be >= 1, got %d", tp)
	}
	if m.Heads%tp != 0 {
		return fmt.Errorf("gpu: %s: %d attention heads cannot be split over tp=%d", m.Name, m.Heads, tp)
	}
	if m.IsMLA() {
		return nil
	}
	if (tp <= m.KVHeads && m.KVHeads%tp != 0) || (tp > m.KVHeads && tp%m.KVHeads != 0) {
		return fmt.Errorf("gpu: %s: %d KV heads cannot be split or replicated over tp=%d", m.Name, m.KVHeads, tp)
	}
	return nil
}

// KVHeadsPerGPU is the number of KV heads each of tp ranks stores:
// KVHeads/tp, but at least 1 (heads are replicated when tp > KVHeads, as in
// SGLang's max(1, num_kv_heads // tp)). tp < 1 is treated as 1.
func (m Model) KVHeadsPerGPU(tp int) int {
	if tp < 1 {
		tp = 1
	}
	h := (m.KVHeads + tp - 1) / tp
	return max(h, 1)
}

// KVBytesPerTokenPerGPU is the KV-cache size of one token on one of tp
// ranks: SGLang's cell_size, the divisor of its pool formula.
//
//   - GQA: 2 (K and V) · layers · KVHeadsPerGPU(tp) · head_dim · bytes.
//   - MLA: (kv_lora_rank + qk_rope_dim) · layers · bytes; the latent is
//     replicated on every rank, so this does not shrink with tp.
//
// tp < 1 is treated as 1.
func (m Model) KVBytesPerTokenPerGPU(tp int) int64 { return m.kvCellBytes(tp) }

// kvCellBytes implements KVBytesPerTokenPerGPU without copying m.
func (m *Model) kvCellBytes(tp int) int64 {
	if m.IsMLA() {
		return int64(math.Round(float64(m.KVLoraRank+m.QKRopeDim) * float64(m.Layers) * m.KVBytesPerElem))
	}
	return int64(math.Round(2 * float64(m.Layers) * float64(m.KVHeadsPerGPU(tp)) * float64(m.HeadDim) * m.KVBytesPerElem))
}

// KVBytesPerToken is the KV-cache size of one token of one sequence held by
// a worker that runs the model over tp tensor-parallel ranks, summed over the
// ranks that hold distinct slices. It is the number of bytes a P→D transfer
// moves per token when prefill and decode use the same tp (each rank ships
// its own slice), and tokens × KVBytesPerToken is what the worker's pools
// hold in total.
//
//   - GQA, tp <= KVHeads: 2 · layers · kv_heads · head_dim · bytes,
//     independent of tp (heads are split, not copied). Llama-3.1-8B: 131,072.
//   - GQA, tp > KVHeads: each rank stores one head, so the number is
//     tp/kv_heads times the tp=1 value (replicas are stored and shipped).
//   - MLA: (kv_lora_rank + qk_rope_dim) · layers · bytes, not multiplied or
//     divided by tp: every rank holds the same latent and only one copy needs
//     to move. DeepSeek-V3: 70,272.
//
// tp < 1 is treated as 1.
func (m Model) KVBytesPerToken(tp int) int64 {
	if tp < 1 {
		tp = 1
	}
	if m.IsMLA() {
		return m.KVBytesPerTokenPerGPU(tp)
	}
	return int64(tp) * m.KVBytesPerTokenPerGPU(tp)
}

// WeightBytes is the storage of all weights of one replica (Params ·
// BytesPerParam), summed over tensor-parallel ranks.
func (m Model) WeightBytes() float64 { return m.Params * m.BytesPerParam }

// RoutedExpertParams is the parameter count of all routed experts
// (gate, up and down projections), the part of an MoE model of which a
// decode step only reads the experts its tokens are routed to. 0 for dense
// models.
func (m Model) RoutedExpertParams() float64 {
	if !m.IsMoE() {
		return 0
	}
	return float64(m.Layers-m.DenseLayers) * float64(m.Experts) * m.expertParams()
}

// expertParams is the parameter count of one expert (gate, up, down).
func (m *Model) expertParams() float64 {
	return 3 * float64(m.Hidden) * float64(m.MoEIntermediate)
}

// embeddingParams is the size of one vocab × hidden matrix.
func (m *Model) embeddingParams() float64 { return float64(m.Vocab) * float64(m.Hidden) }

// inputEmbeddingOnly is the number of parameters that are stored but not
// streamed by a forward pass: the input embedding table when it is not tied
// to the LM head (only batch rows of it are gathered).
func (m *Model) inputEmbeddingOnly() float64 {
	if m.TiedEmbeddings {
		return 0
	}
	return m.embeddingParams()
}

// linearParamsPerToken is the number of weights every prefill token is
// multiplied with: ActiveParams without the embedding table and the LM head
// (the LM head runs once per sequence, for the last position).
func (m *Model) linearParamsPerToken() float64 {
	p := m.ActiveParams - m.inputEmbeddingOnly() - m.embeddingParams()
	return max(p, 0)
}

// decodeParamsPerToken is the number of weights every decode token is
// multiplied with: linear layers plus the LM head.
func (m *Model) decodeParamsPerToken() float64 {
	return m.linearParamsPerToken() + m.embeddingParams()
}

// qkDim and vDim are the per-head dimensions of the attention dot products
// in prefill (MLA prefill runs in the decompressed multi-head form).
func (m *Model) qkDim() float64 { return float64(m.HeadDim + m.QKRopeDim) }
func (m *Model) vDim() float64  { return float64(m.HeadDim) }

// prefillAttnFLOPsPerPair is the FLOPs of one (query, key) pair over all
// layers: QKᵀ and PV, 2 FLOPs per multiply-add.
func (m *Model) prefillAttnFLOPsPerPair() float64 {
	return 2 * float64(m.Layers) * float64(m.Heads) * (m.qkDim() + m.vDim())
}

// decodeAttnFLOPsPerPair is the same for decode; MLA decodes in the
// weight-absorbed form, attending over the compressed latent.
func (m *Model) decodeAttnFLOPsPerPair() float64 {
	if m.IsMLA() {
		r := float64(m.KVLoraRank)
		return 2 * float64(m.Layers) * float64(m.Heads) * (2*r + float64(m.QKRopeDim))
	}
	return m.prefillAttnFLOPsPerPair()
}

// ExpectedExpertsTouched is the expected number of distinct routed experts
// (per MoE layer) that tokens route to, when each token picks TopK distinct
// experts uniformly at random: E·(1 − (1 − k/E)^tokens). It is 0 for no
// tokens, TopK for one token, and saturates at Experts. 0 for dense models.
func (m Model) ExpectedExpertsTouched(tokens int64) float64 { return m.expertsTouched(tokens) }

// expertsTouched implements ExpectedExpertsTouched without copying m.
func (m *Model) expertsTouched(tokens int64) float64 {
	if !m.IsMoE() || tokens <= 0 {
		return 0
	}
	e := float64(m.Experts)
	k := float64(m.TopK)
	if k >= e {
		return e
	}
	// -expm1(t·log1p(-k/e)) = 1 - (1-k/e)^t, accurate for small t·k/e.
	frac := -math.Expm1(float64(tokens) * math.Log1p(-k/e))
	return min(e*frac, e)
}

package gpu

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Default efficiencies and overheads used by NewPerf: one set for every
// model, GPU and TP degree (nothing is special-cased). perf_test.go holds the
// measurements they are checked against and logs model vs target:
//
//   - decode: vLLM perf CI on H200 (Llama-3.1-8B TP1 and Llama-3-70B TP4,
//     batch 8). MBU was set to 0.6 a priori; StepOverhead and
//     AllReduceLatency were then solved from those two figures, and
//     Mixtral-8x7B TP2 (not used for fitting) lands within 14 %.
//   - prefill: Mooncake's vLLM P/D benchmark (Qwen3-8B TP8 on H800) is a
//     check, not a fit: MFU and CommEfficiency are ASSUMED (no fit exists;
//     docs/MODEL.md's parameter table), and the model is 15–20 % faster
//     than that benchmark (TP8 on an 8B model is unusually inefficient).
//   - pool: SGLang start-up logs on H100 for ReservedMemory.
const (
	// DefaultMFU is the fraction of peak bf16 FLOP/s that a forward pass
	// achieves end to end when it is compute bound (GEMMs, attention and the
	// memory-bound glue kernels between them); long-prompt prefill in
	// vLLM/SGLang typically lands at 30–45 %. ASSUMED: no fit exists.
	DefaultMFU = 0.35
	// DefaultMBU is the fraction of peak HBM bandwidth achieved when a pass
	// is memory bound (weight GEMVs, paged-attention KV reads).
	DefaultMBU = 0.6
	// DefaultCommEfficiency is the achieved all-reduce bus bandwidth as a
	// fraction of GPU.Interconnect. nccl-tests reach 0.8–1.0 at GB message
	// sizes; the 10–100 MB all-reduces of prefill inside a serving engine
	// get less.
	DefaultCommEfficiency = 0.6
	// DefaultAllReduceLatency is the fixed cost of one tensor-parallel
	// all-reduce (two per layer); it dominates the TP part of a decode step.
	DefaultAllReduceLatency = 18 * time.Microsecond
	// DefaultStepOverhead is the per-iteration cost of a decode step outside
	// the kernels' streaming time: scheduling, input preparation, sampling,
	// detokenisation and launch gaps.
	DefaultStepOverhead = 1260 * time.Microsecond
	// DefaultPrefillOverhead is the same for a prefill-only forward pass.
	DefaultPrefillOverhead = 1260 * time.Microsecond
	// DefaultReservedMemory is the device memory per GPU that is gone before
	// SGLang measures its total_gpu_memory (CUDA context, cuBLAS/NCCL
	// workspaces): H100 start-up logs show 78.3–78.8 GiB available of
	// 79.65 GiB before the weights load.
	DefaultReservedMemory = 1.1 * (1 << 30)
)

// actBytes is the size of one activation element exchanged by TP
// all-reduces (bf16).
const actBytes = 2

// Perf is the analytic cost model of one worker: a model replica running on
// TP GPUs of one kind with tensor parallelism. Build it with NewPerf, then
// adjust the efficiency fields if needed; methods never panic (out-of-range
// inputs are clamped, see each method) and are pure functions of the
// receiver and their arguments.
//
// A forward pass costs
//
//	max(FLOPs / (TP·FLOPS·MFU), bytes / (TP·HBM·MBU)) + comm + overhead
//
// where FLOPs and bytes are summed over the TP group, comm is
// 2·layers all-reduces of the pass's activations (TP > 1 only) and overhead
// is StepOverhead or PrefillOverhead.
type Perf struct {
	// Model is the model being served.
	Model Model
	// GPU is the accelerator of every rank.
	GPU GPU
	// TP is the tensor-parallel degree (GPUs per worker).
	TP int
	// MFU is the achieved fraction of GPU.FLOPS when compute bound.
	MFU float64
	// MBU is the achieved fraction of GPU.HBMBandwidth when memory bound.
	MBU float64
	// CommEfficiency is the achieved all-reduce bus bandwidth as a fraction
	// of GPU.Interconnect.
	CommEfficiency float64
	// AllReduceLatency is the fixed cost of one all-reduce (TP > 1).
	AllReduceLatency time.Duration
	// StepOverhead is added once to every pass that decodes.
	StepOverhead time.Duration
	// PrefillOverhead is added once to every prefill-only pass.
	PrefillOverhead time.Duration
	// ReservedMemory is the per-GPU memory in bytes that is neither weights
	// nor KV cache and is taken before SGLang measures free memory (CUDA
	// context, library workspaces). It only affects PoolTokens.
	ReservedMemory float64
}

// NewPerf returns the cost model of m on tp GPUs of type g with the default
// efficiencies. It fails if the model or GPU is invalid or m cannot be split
// over tp ranks (see Model.ValidTP). It does not check that the weights fit:
// PoolTokens is 0 when they do not.
func NewPerf(m Model, g GPU, tp int) (Perf, error) {
	p := Perf{
		Model: m, GPU: g, TP: tp,
		MFU:              DefaultMFU,
		MBU:              DefaultMBU,
		CommEfficiency:   DefaultCommEfficiency,
		AllReduceLatency: DefaultAllReduceLatency,
		StepOverhead:     DefaultStepOverhead,
		PrefillOverhead:  DefaultPrefillOverhead,
		ReservedMemory:   DefaultReservedMemory,
	}
	if err := p.Validate(); err != nil {
		return Perf{}, err
	}
	return p, nil
}

// Validate checks the model, the GPU, the TP split and the efficiency
// fields (fractions in (0, 1], durations and reserved memory >= 0).
func (p Perf) Validate() error {
	if err := p.Model.Validate(); err != nil {
		return err
	}
	if err := p.GPU.Validate(); err != nil {
		return err
	}
	if err := p.Model.ValidTP(p.TP); err != nil {
		return err
	}
	var errs []error
	frac := func(name string, v float64) {
		if !(v > 0 && v <= 1) {
			errs = append(errs, fmt.Errorf("%s must be in (0, 1], got %g", name, v))
		}
	}
	frac("mfu", p.MFU)
	frac("mbu", p.MBU)
	frac("comm_efficiency", p.CommEfficiency)
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"all_reduce_latency", p.AllReduceLatency}, {"step_overhead", p.StepOverhead}, {"prefill_overhead", p.PrefillOverhead}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s must be >= 0, got %v", d.name, d.v))
		}
	}
	if !(p.ReservedMemory >= 0 && p.ReservedMemory < p.GPU.Memory) {
		errs = append(errs, fmt.Errorf("reserved_memory must be in [0, memory), got %g", p.ReservedMemory))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gpu: invalid perf for %s on %dx%s: %w", p.Model.Name, p.TP, p.GPU.Name, err)
	}
	return nil
}

// tp is TP clamped to >= 1 so that a zero Perf cannot divide by zero.
func (p *Perf) tp() int { return max(p.TP, 1) }

// KVBytesPerToken is Model.KVBytesPerToken(TP): KV bytes per token held by
// the whole worker and moved by a P→D transfer.
func (p Perf) KVBytesPerToken() int64 { return p.Model.KVBytesPerToken(p.tp()) }

// KVBytesPerTokenPerGPU is Model.KVBytesPerTokenPerGPU(TP) (SGLang's
// cell_size).
func (p Perf) KVBytesPerTokenPerGPU() int64 { return p.Model.KVBytesPerTokenPerGPU(p.tp()) }

// WeightBytesPerGPU is the weight storage of one rank, WeightBytes/TP
// (replicated norms and embeddings are ignored).
func (p Perf) WeightBytesPerGPU() float64 { return p.Model.WeightBytes() / float64(p.tp()) }

// PoolTokens is the KV pool size in tokens that SGLang allocates at start-up
// (max_total_num_tokens, page size 1), computed per rank:
//
//	total  = GPU.Memory − ReservedMemory        // SGLang's total_gpu_memory
//	rest   = total·memFractionStatic − WeightBytes/TP
//	tokens = floor(rest / KVBytesPerTokenPerGPU)
//
// which is SGLang's (avail_after_weights − total·(1 − fraction)) / cell_size.
// For GQA models (and ReservedMemory = 0) this is
// (Memory·TP·fraction − WeightBytes) / KVBytesPerToken. The result is 0 when
// the weights do not fit, or memFractionStatic is not in (0, 1].
func (p Perf) PoolTokens(memFractionStatic float64) int {
	if !(memFractionStatic > 0 && memFractionStatic <= 1) {
		return 0
	}
	cell := p.KVBytesPerTokenPerGPU()
	if cell <= 0 {
		return 0
	}
	total := p.GPU.Memory - p.ReservedMemory
	rest := total*memFractionStatic - p.WeightBytesPerGPU()
	if !(rest > 0) {
		return 0
	}
	return int(min(math.Floor(rest/float64(cell)), math.MaxInt32))
}

// Pass is the work of one forward pass: decodes (one new token for each of
// DecodeSeqs sequences) and prefill chunks, possibly mixed as in continuous
// batching with chunked prefill. Build it with AddDecode and AddPrefill; the
// zero Pass is empty.
type Pass struct {
	// DecodeSeqs is the number of sequences that decode one token.
	DecodeSeqs int
	// DecodeContext is the KV tokens those sequences attend over, summed.
	DecodeContext int64
	// PrefillSeqs is the number of sequences with prefill work (each
	// computes logits for its last position).
	PrefillSeqs int
	// PrefillTokens is the number of new tokens prefilled, summed.
	PrefillTokens int64
	// PrefillCached is the number of tokens already in KV under the
	// prefilled sequences, summed (read by attention).
	PrefillCached int64
	// PrefillPairs is the number of causal (query, key) attention pairs of
	// the prefill part: Σ new·cached + new·(new+1)/2.
	PrefillPairs float64
}

// AddPrefill adds one sequence that prefills newTokens on top of
// cachedTokens already in KV (append-prefill when cachedTokens > 0).
// Non-positive newTokens add nothing; negative cachedTokens count as 0.
func (b *Pass) AddPrefill(newTokens, cachedTokens int) {
	if newTokens <= 0 {
		return
	}
	n, c := float64(newTokens), float64(max(cachedTokens, 0))
	b.PrefillSeqs++
	b.PrefillTokens += int64(newTokens)
	b.PrefillCached += int64(max(cachedTokens, 0))
	b.PrefillPairs += n*c + n*(n+1)/2
}

// AddDecode adds seqs decoding sequences whose KV totals contextTokens.
// Non-positive seqs add nothing; negative contextTokens count as 0.
func (b *Pass) AddDecode(seqs int, contextTokens int64) {
	if seqs <= 0 {
		return
	}
	b.DecodeSeqs += seqs
	b.DecodeContext += max(contextTokens, 0)
}

// Empty reports whether the batch has no work.
func (b Pass) Empty() bool { return b.DecodeSeqs <= 0 && b.PrefillTokens <= 0 }

// StepCost is the breakdown of one forward pass as estimated by Perf.Estimate.
type StepCost struct {
	// FLOPs and Bytes are the work of the pass summed over the TP group
	// (Bytes counts weights streamed and KV read or written).
	FLOPs, Bytes float64
	// Compute is FLOPs / (TP·FLOPS·MFU).
	Compute time.Duration
	// Memory is Bytes / (TP·HBMBandwidth·MBU).
	Memory time.Duration
	// Comm is the tensor-parallel all-reduce time (0 when TP = 1).
	Comm time.Duration
	// Overhead is StepOverhead or PrefillOverhead.
	Overhead time.Duration
	// Total is max(Compute, Memory) + Comm + Overhead.
	Total time.Duration
}

// durationOf converts a non-negative number of seconds to a Duration, rounding
// to the nanosecond and saturating instead of overflowing.
func durationOf(s float64) time.Duration {
	ns := math.Round(s * 1e9)
	if !(ns < math.MaxInt64) {
		return math.MaxInt64
	}
	if ns < 0 {
		return 0
	}
	return time.Duration(ns)
}

// Estimate estimates one forward pass over b. An empty pass costs nothing.
// Negative fields of b are treated as 0. The result is monotone: adding
// work to b never makes any component smaller.
func (p Perf) Estimate(b Pass) StepCost { return p.estimate(&b) }

// estimate is Estimate without copying the receiver and argument.
func (p *Perf) estimate(b *Pass) StepCost {
	decodeSeqs := max(int64(b.DecodeSeqs), 0)
	prefillTokens := max(b.PrefillTokens, 0)
	if decodeSeqs == 0 && prefillTokens == 0 {
		return StepCost{}
	}
	m := &p.Model
	tp := float64(p.tp())
	decodeCtx := float64(max(b.DecodeContext, 0))
	cached := float64(max(b.PrefillCached, 0))
	pairs := max(b.PrefillPairs, 0)
	prefillSeqs := float64(max(b.PrefillSeqs, 0))
	tokens := decodeSeqs + prefillTokens

	flops := 2*m.linearParamsPerToken()*float64(prefillTokens) +
		2*m.embeddingParams()*prefillSeqs +
		2*m.decodeParamsPerToken()*float64(decodeSeqs) +
		m.prefillAttnFLOPsPerPair()*pairs +
		m.decodeAttnFLOPsPerPair()*decodeCtx

	// Weights streamed once per pass: everything but the input embedding
	// table, with only the routed experts that some token picked.
	routed := m.RoutedExpertParams()
	weightParams := m.Params - m.inputEmbeddingOnly() - routed
	if routed > 0 {
		weightParams += routed * m.expertsTouched(tokens) / float64(m.Experts)
	}
	kvTokens := decodeCtx + cached + float64(prefillTokens)
	// KV of all ranks: per-GPU cell times TP (MLA latents are read by every
	// rank).
	bytes := weightParams*m.BytesPerParam + kvTokens*float64(m.kvCellBytes(p.tp()))*tp

	var c StepCost
	c.FLOPs, c.Bytes = flops, bytes
	computeS := flops / (tp * p.GPU.FLOPS * p.MFU)
	memoryS := bytes / (tp * p.GPU.HBMBandwidth * p.MBU)
	var commS float64
	if p.TP > 1 {
		msg := float64(tokens) * float64(m.Hidden) * actBytes
		perAllReduce := p.AllReduceLatency.Seconds() +
			msg*2*(tp-1)/tp/(p.GPU.Interconnect*p.CommEfficiency)
		commS = 2 * float64(m.Layers) * perAllReduce
	}
	c.Compute = durationOf(computeS)
	c.Memory = durationOf(memoryS)
	c.Comm = durationOf(commS)
	switch {
	case decodeSeqs > 0 && prefillTokens > 0:
		c.Overhead = max(p.StepOverhead, p.PrefillOverhead)
	case decodeSeqs > 0:
		c.Overhead = p.StepOverhead
	default:
		c.Overhead = p.PrefillOverhead
	}
	c.Overhead = max(c.Overhead, 0)
	c.Total = durationOf(max(computeS, memoryS) + commS)
	if c.Total > math.MaxInt64-c.Overhead {
		c.Total = math.MaxInt64 // saturate rather than wrap
	} else {
		c.Total += c.Overhead
	}
	return c
}

// StepTime is Estimate(b).Total.
func (p Perf) StepTime(b Pass) time.Duration { return p.estimate(&b).Total }

// PrefillTime is the time of one prefill pass of newTokens for a single
// sequence on top of cachedTokens already in KV (append-prefill when
// cachedTokens > 0; the prefix is not recomputed but attention reads it).
// Linear FLOPs (2·active params per token) plus causal attention FLOPs over
// cached+new, against a floor of reading the weights once, plus TP
// all-reduces and PrefillOverhead. It is 0 when newTokens <= 0 and is
// monotone non-decreasing in both arguments; negative cachedTokens count as
// 0.
func (p Perf) PrefillTime(newTokens, cachedTokens int) time.Duration {
	var b Pass
	b.AddPrefill(newTokens, cachedTokens)
	return p.estimate(&b).Total
}

// DecodeStepTime is the time of one decode iteration for batch sequences
// whose KV totals contextTokens: weight bytes (for MoE only the experts hit
// by batch·TopK routings, saturating at all experts) plus KV bytes over
// TP·HBM·MBU, against a compute floor, plus TP all-reduces and
// StepOverhead. It is 0 when batch <= 0 and is monotone non-decreasing in
// both arguments; negative contextTokens count as 0.
func (p Perf) DecodeStepTime(batch int, contextTokens int64) time.Duration {
	var b Pass
	b.AddDecode(batch, contextTokens)
	return p.estimate(&b).Total
}

// PrefillThroughput is the prefill rate in tokens/s of a single cold
// sequence of n tokens (n / PrefillTime(n, 0)); 0 when n <= 0.
func (p Perf) PrefillThroughput(n int) float64 {
	t := p.PrefillTime(n, 0)
	if n <= 0 || t <= 0 {
		return 0
	}
	return float64(n) / t.Seconds()
}

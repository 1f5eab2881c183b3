// Package gpu models the GPUs of a disaggregated serving cluster: a model
// and GPU catalog with an analytic (roofline-style) cost model, and the
// deterministic state machines of the workers that use it: the prefill
// worker (FIFO batches under a token budget, block-LRU prefix cache) and the
// decode worker (SessionAwareCache KV accounting, Algorithm 2 admission,
// append-prefill and continuous batching modelled analytically between
// batch changes).
//
// Contract: every worker is a pure state machine driven by explicit
// emulated times (`now`, a time.Duration since the start of the run) that
// must never decrease. Inputs go in through methods (Submit, Admit,
// Arrive, Run, Advance); Ready returns what happened since the last call
// (first tokens, completions, evictions, finished prefills) and when to
// call Advance next, as an effect.Ready; nothing here reads the wall clock,
// sleeps or starts a goroutine, so a run is a function of its inputs.
package gpu

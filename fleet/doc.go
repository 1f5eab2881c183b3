// Package fleet is the pure core of `pdemu serve --endpoints workers`: a
// fleet of independent prefill, decode and fused workers, each addressed by name
// the way a gateway addresses vLLM pods, with vLLM's disaggregated
// hand-off between them and the KV-cache changes a KV-aware router
// follows.
//
// Contract:
//
//   - A Fleet is a deterministic state machine driven by explicit emulated
//     times that never decrease (Submit, Advance, Add, Drain); Take returns
//     what happened since the last call in a fixed order; nothing here
//     reads the wall clock, sleeps, starts a goroutine or imports
//     protoactor. The same calls at the same times give the same outputs.
//   - The per-worker state machines are gpu's (PrefillWorker and
//     FusedWorker with TrackCache, DecodeWorker) and the links are transfer.NICs built from
//     the scenario exactly as cluster.Build builds them; the scenario's
//     router is not used: whoever submits a request names its worker.
//   - Hand-off (vLLM's NixlConnector flow, docs/SERVE.md): a prefill call
//     with RemoteDecode runs the prompt on the prefill worker, produces one
//     token and leaves a Handoff (the KV stays on the prefill worker for
//     Options.HoldTimeout, vLLM's abort timeout). A decode call that names
//     the Handoff pulls the KV the decode worker does not hold already over
//     the prefill worker's NIC (bytes, NIC sharing and transport from the
//     link model), then decodes; a decode call without one prefills
//     locally. A Handoff is used at most once; an unknown, expired, reused
//     or mismatched one fails the request with a Reason* reason.
//   - Every submitted request ends exactly once: Take reports one OutDone
//     or OutFailed per request (after at most one OutFirst), also when its
//     worker is drained.
//   - Workers come and go: Add starts a worker (empty; ready after its
//     start-up delay), Drain stops new requests to it and removes it once
//     nothing is in flight on it or its NICs.
//   - KV events: every change of a worker's KV residency is reported as an
//     OutKV with the block hashes stored and removed (a prefill worker's
//     prefix cache; a fused worker's HBM and DRAM tiers; a decode worker's resident sessions' prompt blocks,
//     counted once however many sessions hold them). Replaying them gives
//     Residency(worker) exactly.
package fleet

// Package policy holds pdemu's routing policies as pure, deterministic state
// machines: the KVC-Router (Algorithms 1–3 of the KVC paper: Route on the
// router, Admit on the decode worker, Dispatch tying them together with
// reset-on-success) and the vanilla P/D round-robin baseline.
//
// Contract: nothing in this package reads the wall clock, starts a goroutine
// or imports protoactor. A router actor feeds a policy the events it sees
// (a new request, an admission reply, a completion, an eviction notice) and
// carries out the Step the policy returns. Given the same sequence of calls a
// policy returns the same Steps.
//
// Router state and its updates (the resident-set estimate is the router's
// belief, the decode worker's bookkeeping is the truth):
//   - on an accepted admission (Direct/Seed/Reseed) the request's prefix
//     blocks are recorded as resident on the chosen worker for that session
//     (replacing what the router had recorded for the session there);
//   - on an eviction notice from a decode worker the session's blocks are
//     removed from that worker's estimate;
//   - completions only decrement inflight: the next turn's request carries
//     the grown prefix and is recorded when it is admitted.
//
// Fallback requests are served vanilla P/D style and do not change the
// resident estimate (the decode worker frees their KV at completion).
package policy

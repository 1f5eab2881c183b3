// Package policy holds pdemu's routing policies as pure, deterministic state
// machines: the KVC-Router (Algorithms 1–3 of the KVC paper: Route on the
// router, Admit on the decode worker, Dispatch tying them together with
// reset-on-success) and the baselines that take it apart.
//
// Contract: nothing in this package reads the wall clock or imports
// protoactor, and nothing is safe for concurrent use (KVC.RouteShared
// only reads, so callers may run it under a shared lock: bench.SyncKVC
// does); no policy starts a goroutine. A router node feeds a policy the events it sees (a new
// request, an admission reply, a completion, an eviction notice) and
// carries out the Step the policy returns. Given the same sequence of calls
// a policy returns the same Steps.
//
// # Policies
//
//	policy        | what it isolates                                  | when to use it
//	--------------+---------------------------------------------------+----------------------------------------------
//	Vanilla       | nothing: round-robin P and D, every request       | the naive xPyD P/D baseline (open question 1
//	              | prefilled on P and its whole KV moved to D         | of the spec); the floor KVC must beat
//	StickyOnly    | session pinning alone: a session stays on the D   | how much of KVC's gain is plain stickiness;
//	              | it first went to (round robin for new sessions),  | shows hot spots and overload without
//	              | no overlap scoring, no admission, no migration    | admission or migration
//	KVScore       | Algorithm 1's scoring alone: overlap + α·sticky,  | the value of worker-side admission and of
//	              | no admission RPC; Direct-or-Seed from the         | the reject/blacklist/migration machinery
//	              | router's own residency belief                     | (v4-style optimistic router-side estimate)
//	KVC (v2)      | the full KVC-Router: Route + worker Admit +       | the system under study
//	              | Dispatch with ε tries, blacklist, reset-on-success|
//	KVC (V1)      | KVC without reset-on-success (Algorithm 3 line 8) | reproducing the v1 thrashing of §3.4
//	CacheAwareDP  | SGLang-style cache-aware data parallelism over    | the "4-way DP" comparison: prefix locality
//	              | fused workers: longest-prefix match ≥ threshold,  | and load balance without P/D separation
//	              | else least loaded; shortest queue when imbalanced |
//
// Every policy has Begin(ds *Dispatch) Step. KVC adds Admitted/Rejected
// (admission replies), and KVC, KVScore and CacheAwareDP take Finished(d)
// (a request sent to d ended) and Evicted(d, s) (d dropped session s's KV).
// Admission-free policies return steps with Unadmitted set: ActRun (run on
// D without asking: Direct on a decode worker, ModeFused on a fused
// worker) or ActPrefill with Seed/Reseed that no worker reserved.
//
// # KVC router state and its updates
//
// The resident-set estimate is the router's belief, the decode worker's
// bookkeeping is the truth:
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
//
// Readings of the spec where it is ambiguous: overlap counts the request's
// block positions whose hash is resident (duplicates count each time);
// Route's degenerate branch is an argmin over the workers not yet tried in
// this dispatch, and a dispatch whose every worker was tried falls back
// before ε; reset-on-success resets rejects[s,d*] only for the admitting
// worker (Algorithm 3 line 8; §3.4's prose says "the blacklist is
// cleared", the algorithm is followed); ties at every level go to the
// lowest worker index. §3.3's migration bound holds only under stream
// assumptions, spelled out at TestInvariant3MigrationBound.
//
// # Hot path
//
// Route is exact (tests compare it with a literal transcription of
// Algorithm 1 on arbitrary inputs) and allocation-free. The ResidentIndex
// keeps per-segment state: the owner lists as a radix trie whose segments
// (runs of blocks with the same holders, hashes consecutive in an arena)
// carry the holder counts, so recording, removing and counting a session
// cost its segments, not its blocks; a block known nowhere costs a filter
// bit, and the part of a request that repeats the session's record on its
// pinned worker is counted by walking that record's path, after one memory
// comparison. Its answers are the per-block index's (index_diff_test.go). KVC keeps the overlap it last
// computed, keyed by dispatch, request and a version of the state it
// reads, so the routing log's Explain and the Route of the same try
// count it once, in either order.
//
// docs/CONTRIBUTING.md has the recipe for adding a routing policy: the files to
// touch, in order, and the test that proves it.
package policy

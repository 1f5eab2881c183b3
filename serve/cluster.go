package serve

import (
	"context"
	"time"

	"github.com/pdemu/pdemu/workload"
)

// Cluster is what the server needs from an emulated cluster.
type Cluster interface {
	// Submit starts r (whose ID, Session, Turn, InputLen, OutputLen,
	// Blocks, BlockTokens and AppendLen the server has set; Arrival is the
	// cluster's to set) and returns its events: zero or more Token events
	// (the first is the first token), then exactly one Done or Failed, then
	// the channel is closed. Cancelling ctx (the client went away) may
	// abort the request, as vLLM does: it then ends with Failed, Reason
	// "aborted" (gpu.ReasonAborted); a cluster that cannot abort runs it to
	// its end. Either way the caller must drain the channel. An error means the request was not
	// started (the cluster is stopping or full) and no event will come.
	Submit(ctx context.Context, r *workload.Request) (<-chan Event, error)
	// Snapshot is the cluster's state now, for the metrics scrape. It must
	// be safe for concurrent use and cheap (it is called on every scrape).
	Snapshot() Snapshot
}

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	EvToken  EventKind = iota + 1 // one output token (Index 0 is the first token)
	EvDone                        // the request produced its last token
	EvFailed                      // the request failed (Reason says why)
)

func (k EventKind) String() string {
	switch k {
	case EvToken:
		return "token"
	case EvDone:
		return "done"
	case EvFailed:
		return "failed"
	}
	return "unknown"
}

// Event is something that happened to one submitted request.
type Event struct {
	Kind EventKind
	// Index is the 0-based output token index (EvToken).
	Index int
	// Since is the emulated time since the request arrived in the cluster
	// (so the EvToken with Index 0 carries the TTFT, EvDone the E2E latency).
	Since time.Duration
	// Emulated is the emulated clock when it happened; Wall the real time
	// the cluster emitted it.
	Emulated time.Duration
	Wall     time.Time
	// Worker is the worker that produced the tokens (the decode worker, or
	// the fused worker); Prefill the prefill worker, "" if none.
	Worker  string
	Prefill string
	// EvDone: the routing mode (Direct, Seed, Reseed, Fallback, Vanilla,
	// Fused) and the prompt tokens served from a cache.
	Mode         string
	CachedTokens int
	// EvDone: the request's time waiting for its prefill, in prefill
	// (until its first token) and decoding (first to last token), emulated
	// (vllm:request_queue_time_seconds, _prefill_time_, _decode_time_).
	Queue, PrefillTime, DecodeTime time.Duration
	// EvFailed: why, and whether a fault of the cluster (a crash, a cut
	// link) caused it: the client gets 503 with Retry-After, as from a
	// real fleet that lost the replica serving it.
	Reason string
	Fault  bool
}

// Snapshot is the cluster's state at one instant.
type Snapshot struct {
	// Emulated is the emulated clock; Lag how far it is behind the wall
	// clock times the time scale (0 in a run that keeps up).
	Emulated time.Duration
	Lag      time.Duration
	Workers  []WorkerState
	Router   RouterState
	Links    []LinkState
}

// WorkerState is one worker's load.
type WorkerState struct {
	Name    string
	Role    string // "prefill", "decode" or "fused"
	Running int    // requests in the running batch
	Waiting int    // requests queued on the worker
	KVUsed  int    // KV tokens held
	KVCap   int    // KV tokens available (0 if unknown)
}

// RouterState counts the router's decisions so far (monotonic).
type RouterState struct {
	Migrations int64
	Fallbacks  int64
	Blacklists int64
	Rejections int64
	// SessionsForgotten: idle sessions the router forgot (their counters
	// stay in the totals above).
	SessionsForgotten int64
}

// LinkState is one prefill→decode link (or NIC).
type LinkState struct {
	Name        string
	Bytes       int64   // KV bytes moved so far (monotonic)
	Utilisation float64 // busy fraction (a transfer in flight) recently, 0..1
}

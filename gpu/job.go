package gpu

import (
	"time"

	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/workload"
)

// Cost is the part of the cost model the workers need (Perf implements it).
type Cost interface {
	PrefillTime(newTokens, cachedTokens int) time.Duration
	DecodeStepTime(batch int, contextTokens int64) time.Duration
	// StepTime costs one forward pass (a prefill batch reads the weights once).
	StepTime(b Pass) time.Duration
}

// Job is one request on its way through the cluster, with its timeline. It
// is owned by exactly one cluster node at a time and handed over in
// messages (cluster.Protocol says who owns it after each); outside this
// package only the cluster nodes write it.
type Job struct {
	Req  *workload.Request
	Mode policy.Mode
	P, D int // worker indexes, -1 = none
	// Released numbers the jobs in the order the driver released them
	// (0, 1, …: arrival order; metrics.Collector's arrival watermark).
	Released int64

	Arrival       time.Duration // released by the driver
	Admitted      time.Duration // admission decided (or dispatch for vanilla)
	PrefillStart  time.Duration
	PrefillEnd    time.Duration
	TransferStart time.Duration
	TransferEnd   time.Duration
	FirstToken    time.Duration
	Done          time.Duration
	// Timeline points that split the TTFT (metrics.Collector.Add; 0 = not
	// reached, which a job's later points never are, see metrics.SplitTTFT).
	PQueued       time.Duration // the prefill worker got the job
	DGot          time.Duration // the decode (or fused) worker got the job (last time, for Seed/Reseed: its KV)
	KVReserved    time.Duration // its KV room on the decode worker was reserved
	DPrefillStart time.Duration // append-prefill on the decode/fused worker started
	DPrefillEnd   time.Duration // and ended

	PrefillTokens int   // tokens actually computed by a prefill (P or append-prefill on D)
	CachedTokens  int   // prompt tokens served from a cache
	TransferBytes int64 // KV bytes moved over a link
	Tries         int   // admission attempts
	Reasons       []string
	// KVCause says why a Seed, Reseed or Fallback request had no resident
	// KV to serve it (cluster/kvcause.go; per_request.csv's kv_cause).
	KVCause string
	Failed  string // non-empty: the request failed for this reason
	// Bucketed (fused) deployments: the routing decision.
	Bucket                string // bucket name ("" outside bucketed runs)
	BucketPolicy          string // global router policy
	LengthBucketMatch     bool   // the chosen bucket is the one whose range holds the input length
	BucketPredictedPrefix int    // blocks predicted cached in the chosen bucket
	RouteLog              []byte // one routing_log.jsonl line (JSON, no newline)

	// Faults (cluster/faults.go): FaultHit is 1 + the id of the fault that
	// made this attempt fail (0 = none); Retries counts the dispatches
	// lost to faults before this one, RetryReasons says why each was lost.
	FaultHit     int32
	Retries      int
	RetryReasons []string

	// Unadmitted: no worker admitted the request (admission-free
	// policies); the decode worker reserves its KV on arrival, waiting for
	// room.
	Unadmitted bool

	// decode-side state
	remaining  float64       // decode steps still to run
	footprint  int           // KV tokens a Fallback/Vanilla job needs on the decode worker
	reserved   bool          // footprint is held
	chunkDone  int           // append-prefill tokens done (chunked prefill)
	aborting   bool          // aborted while its append-prefill pass runs (Abort)
	loadTokens int           // fused: cached tokens that come back from the DRAM tier
	loadUntil  time.Duration // fused: when that load ends
	ctx        int           // KV tokens this request attends to while decoding
}

// dropFront removes q's first n jobs. A short queue is shifted down in
// place, so its array is reused by the next append (re-slicing q[n:]
// gives up the front of the array, and a queue fed and drained one job
// at a time reallocated every few appends); a long one is re-sliced,
// which bounds the copy.
func dropFront(q []*Job, n int) []*Job {
	if len(q) > 64 {
		return q[n:]
	}
	k := copy(q, q[n:])
	clear(q[k:])
	return q[:k]
}

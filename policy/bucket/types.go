package bucket

import (
	"time"

	"github.com/pdemu/pdemu/workload"
)

// Range is an inclusive range of input tokens.
type Range struct{ Min, Max int }

// Contains reports whether Min <= n <= Max.
func (r Range) Contains(n int) bool { return r.Min <= n && n <= r.Max }

// BucketConfig is one input-length bucket: its name, the input lengths it
// is meant for and its number of instances. A bucket's id is its index in
// the slice given to NewGlobal.
type BucketConfig struct {
	Name      string
	Range     Range
	Instances int
}

// BucketView is a read-only summary of one bucket, built by the runtime
// for every request, that the global router scores.
type BucketView struct {
	ID        int // index of the bucket in NewGlobal's buckets
	Name      string
	Min, Max  int // the bucket's input-token range (inclusive)
	Instances int

	QueueSum, QueueMax int   // waiting requests over the bucket's instances (sum, max)
	KVUsed, KVTotal    int64 // KV tokens in use and in total over the instances
	Active             int   // requests admitted and not finished
	// PredictedPrefix is the number of leading blocks of the request
	// predicted cached somewhere in the bucket (the bucket's
	// Local.PredictPrefix).
	PredictedPrefix int
	DrainTime       time.Duration // estimated time to drain the queued work
}

// BucketCandidate is one bucket as the global router saw it.
type BucketCandidate struct {
	View BucketView
	// Score is the policy's cost for the bucket (bucket_score: lower wins;
	// strict_input_length: 0).
	Score    float64
	Eligible bool // the policy may choose the bucket
}

// GlobalDecision is the global router's choice of a bucket.
type GlobalDecision struct {
	// Bucket is the chosen bucket id, or -1 when there is none: the
	// request must then fail with Reason.
	Bucket int
	// StrictBucket is the bucket strict_input_length picks (the one whose
	// range contains the input length), or -1 when no bucket covers it.
	// Bucket != StrictBucket marks a request routed off its length.
	StrictBucket int
	Mode         string // the policy name
	// Reason is why: "in-range" or "off-range" when a bucket was chosen,
	// the failure reason (e.g. "no bucket covers input length 200000")
	// when none was.
	Reason     string
	Candidates []BucketCandidate // one per view, in the order of the views
}

// GlobalConfig selects and tunes the global (bucket) router.
type GlobalConfig struct {
	Policy string // "strict_input_length" | "bucket_score"
	// bucket_score weights: score = LengthPenaltyWeight·length_penalty +
	// LoadWeight·load + CacheWeight·miss (see doc.go). Each must be >= 0
	// and finite; 0 drops the term.
	LengthPenaltyWeight, LoadWeight, CacheWeight float64
}

// Global picks a bucket for a request.
type Global interface {
	Name() string
	// Route picks a bucket among views (one per bucket, built for r at
	// now). It keeps no state between calls.
	Route(r *workload.Request, views []BucketView, now time.Duration) GlobalDecision
}

// InstanceView is one instance of a bucket as the local router sees it.
type InstanceView struct {
	Index               int // index within the bucket
	Queue, Running      int // waiting and running requests
	KVUsed, KVTotal     int64
	QueuedPrefillTokens int64   // prefill tokens waiting on the instance
	PrefillRate         float64 // tokens/s the instance prefills (estimated_ttft)
}

// Load is the request load of an instance: Queue + Running.
func (v InstanceView) Load() int { return v.Queue + v.Running }

// Prober reads an instance's real prefix cache (used by precise).
type Prober interface {
	// CachedPrefix returns how many leading blocks instance holds.
	CachedPrefix(instance int, blocks []uint64) int
}

// InstanceCandidate is one instance as the local router saw it.
type InstanceCandidate struct {
	View InstanceView
	// Score is the policy's score for the instance; higher is better for
	// every local policy (cost-like policies report the negated cost). See
	// the table in doc.go.
	Score float64
	// PredictedPrefix is the meta-store's prediction of the request's
	// leading blocks cached on the instance.
	PredictedPrefix int
	Probed          bool // precise: the instance's real cache was probed (Score is the real prefix)
}

// LocalDecision is the local router's choice of an instance.
type LocalDecision struct {
	Instance   int    // index within the bucket, -1 when there is none
	Mode       string // the policy name
	Reason     string // policy-specific, see doc.go
	Candidates []InstanceCandidate
	// ProbeLatency is the total probe latency the decision costs
	// (precise): the runtime delays the dispatch by it.
	ProbeLatency time.Duration
	// PredictedPrefix is the blocks predicted cached on the chosen
	// instance (for precise, the probed real prefix).
	PredictedPrefix int
}

// KVCConfig tunes the kvc local policy.
type KVCConfig struct {
	Alpha float64 // sticky bonus α of KVC Algorithm 1 (>= 0)
}

// LocalConfig selects and tunes the local (instance) router. Zero values
// select the documented defaults where zero would be meaningless.
type LocalConfig struct {
	Policy string
	// MetaStoreTTL is how long a meta-store entry lives after the last
	// request that recorded it; 0 = forever (until evicted).
	MetaStoreTTL time.Duration
	// precise: each probe costs ProbeLatency; the meta-store's top
	// ProbeTopK instances are probed (0 = every instance).
	ProbeLatency time.Duration
	ProbeTopK    int
	LoadAlpha    float64 // cache_load: weight of the load
	ScoreAlpha   float64 // cache_score: weight of the predicted prefix (blocks)
	ScoreBeta    float64 // cache_score: weight of the load
	// prefix_affinity / cache_affinity: rendezvous hash of the first
	// PrefixK blocks (0 = DefaultPrefixK); FanOut > 1 spreads over the
	// FanOut highest-ranked instances by least load.
	PrefixK, FanOut int
	// OverloadFactor (cache_affinity): an instance is overloaded when its
	// load is above OverloadFactor × max(the bucket's mean load, 1)
	// (0 = DefaultOverloadFactor; must be >= 1).
	OverloadFactor float64
	Seed           uint64 // random
	KVC            KVCConfig
	// cache_aware_dp (nil = policy.DefaultCacheAwareConfig's value):
	// follow the cache when the match ratio reaches CacheThreshold, unless
	// max−min load > BalanceAbs and max > BalanceRel·min.
	CacheThreshold *float64
	BalanceAbs     *int
	BalanceRel     *float64
	// MissRule: "smallest_tree" (SGLang, default when "") or "least_loaded";
	// InclusiveMatch follows the cache at a ratio equal to the threshold too.
	MissRule       string
	InclusiveMatch bool
}

// Defaults LocalConfig's zero values select.
const (
	DefaultPrefixK        = 8
	DefaultOverloadFactor = 2.0
)

// Local picks an instance inside one bucket. Each bucket owns one Local,
// and with it its meta-store: buckets share nothing.
type Local interface {
	Name() string
	// Route picks an instance for r. inst[i] describes instance i (its
	// Index is i); probe may be nil (precise then trusts the meta-store).
	// Route changes no meta-store state (round_robin and random advance
	// their counter / generator).
	Route(r *workload.Request, inst []InstanceView, probe Prober, now time.Duration) LocalDecision
	// Routed records that instance will hold r's blocks (meta-store
	// update, kvc's sticky instance and counters); call it once the
	// decision is applied.
	Routed(r *workload.Request, instance int, now time.Duration)
	// Evicted tells the meta-store that instance dropped blocks (for
	// example gpu.BlockLRU's evicted keys: prefix-chain tails).
	Evicted(instance int, blocks []uint64, now time.Duration)
	// PredictPrefix is the bucket-level prediction for
	// BucketView.PredictedPrefix: the longest leading run of r's blocks
	// the meta-store places on any one instance of the bucket.
	PredictPrefix(r *workload.Request, now time.Duration) int
	// Finished tells load-aware policies that a request ended on instance.
	Finished(instance int, now time.Duration)
}

// EvictionBlind is implemented by a Local whose Evicted ignores the
// blocks it is given (its meta-store follows sessions, not blocks), so
// that its pool's fused workers need not say which blocks they evicted
// (gpu.FusedConfig.EvictedCountOnly).
type EvictionBlind interface{ IgnoresEvictedBlocks() }

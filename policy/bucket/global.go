package bucket

import (
	"fmt"
	"math"
	"time"

	"github.com/pdemu/pdemu/workload"
)

// Global policy names.
const (
	PolicyStrictInputLength = "strict_input_length"
	PolicyBucketScore       = "bucket_score"
)

// Global decision reasons (besides the failure reasons).
const (
	ReasonInRange  = "in-range"  // the chosen bucket's range contains the input length
	ReasonOffRange = "off-range" // bucket_score chose a bucket whose range does not
)

// GlobalPolicies returns the global policy names, sorted.
func GlobalPolicies() []string { return []string{PolicyBucketScore, PolicyStrictInputLength} }

type global struct {
	cfg     GlobalConfig
	score   bool
	buckets []BucketConfig
}

// NewGlobal returns the global router cfg.Policy over buckets (bucket id =
// index). Buckets must have Min >= 0, Min <= Max, at least one instance,
// and disjoint ranges; gaps are allowed (an input length in a gap has no
// strict bucket).
func NewGlobal(cfg GlobalConfig, buckets []BucketConfig) (Global, error) {
	g := &global{cfg: cfg, buckets: append([]BucketConfig(nil), buckets...)}
	switch cfg.Policy {
	case PolicyStrictInputLength:
	case PolicyBucketScore:
		g.score = true
		for _, w := range []struct {
			name string
			v    float64
		}{{"LengthPenaltyWeight", cfg.LengthPenaltyWeight}, {"LoadWeight", cfg.LoadWeight}, {"CacheWeight", cfg.CacheWeight}} {
			if !(w.v >= 0) || math.IsInf(w.v, 0) {
				return nil, fmt.Errorf("bucket: %s must be finite and >= 0, got %v", w.name, w.v)
			}
		}
	default:
		return nil, fmt.Errorf("bucket: unknown global policy %q (known: %v)", cfg.Policy, GlobalPolicies())
	}
	if len(buckets) == 0 {
		return nil, fmt.Errorf("bucket: global policy %s needs at least one bucket", cfg.Policy)
	}
	for i, b := range buckets {
		switch {
		case b.Range.Min < 0 || b.Range.Min > b.Range.Max:
			return nil, fmt.Errorf("bucket %d (%s): bad range [%d, %d]", i, b.Name, b.Range.Min, b.Range.Max)
		case b.Instances < 1:
			return nil, fmt.Errorf("bucket %d (%s): %d instances", i, b.Name, b.Instances)
		}
		for j, a := range buckets[:i] {
			if a.Range.Min <= b.Range.Max && b.Range.Min <= a.Range.Max {
				return nil, fmt.Errorf("bucket %d (%s) [%d, %d] overlaps bucket %d (%s) [%d, %d]",
					i, b.Name, b.Range.Min, b.Range.Max, j, a.Name, a.Range.Min, a.Range.Max)
			}
		}
	}
	return g, nil
}

func (g *global) Name() string { return g.cfg.Policy }

// strict is the bucket whose range contains n, or -1.
func (g *global) strict(n int) int {
	for i, b := range g.buckets {
		if b.Range.Contains(n) {
			return i
		}
	}
	return -1
}

// LengthPenalty is bucket_score's length term: 0 when min <= n <= max,
// otherwise the distance to the range edge crossed, relative to that edge:
// (min − n)/min below the range (at most 1), (n − max)/max above it
// (unbounded). An edge of 0 counts as 1.
func LengthPenalty(n, lo, hi int) float64 {
	switch {
	case n < lo:
		return float64(lo-n) / float64(max(lo, 1))
	case n > hi:
		return float64(n-hi) / float64(max(hi, 1))
	}
	return 0
}

// BucketLoad is bucket_score's load term: the KV pool use KVUsed/KVTotal
// (0 when KVTotal is 0) plus the waiting requests per instance,
// QueueSum/Instances. Below saturation the first term grows from 0 to 1
// with memory pressure; past it, every request waiting per instance adds 1.
func BucketLoad(v BucketView) float64 {
	u := 0.0
	if v.KVTotal > 0 {
		u = float64(v.KVUsed) / float64(v.KVTotal)
	}
	return u + float64(v.QueueSum)/float64(max(v.Instances, 1))
}

// Miss is bucket_score's cache term: 1 − predicted/blocks, clamped to
// [0, 1]; 1 when the request has no blocks.
func Miss(predicted, blocks int) float64 {
	if blocks <= 0 {
		return 1
	}
	return 1 - float64(min(max(predicted, 0), blocks))/float64(blocks)
}

func (g *global) Route(r *workload.Request, views []BucketView, _ time.Duration) GlobalDecision {
	d := GlobalDecision{Bucket: -1, StrictBucket: g.strict(r.InputLen), Mode: g.cfg.Policy}
	d.Candidates = make([]BucketCandidate, len(views))
	for i, v := range views {
		d.Candidates[i] = BucketCandidate{View: v}
	}
	if !g.score {
		for i, v := range views {
			if v.ID == d.StrictBucket && d.StrictBucket >= 0 {
				d.Candidates[i].Eligible = true
				d.Bucket = v.ID
			}
		}
		switch {
		case d.StrictBucket < 0:
			d.Reason = fmt.Sprintf("no bucket covers input length %d", r.InputLen)
		case d.Bucket < 0:
			d.Reason = fmt.Sprintf("no view of bucket %d (%s)", d.StrictBucket, g.buckets[d.StrictBucket].Name)
		default:
			d.Reason = ReasonInRange
		}
		return d
	}

	best := -1
	for i, v := range views {
		if v.ID < 0 || v.ID >= len(g.buckets) {
			continue // not a bucket of this router: never eligible
		}
		b := g.buckets[v.ID]
		s := g.cfg.LengthPenaltyWeight*LengthPenalty(r.InputLen, b.Range.Min, b.Range.Max) +
			g.cfg.LoadWeight*BucketLoad(v) +
			g.cfg.CacheWeight*Miss(v.PredictedPrefix, len(r.Blocks))
		c := &d.Candidates[i]
		c.Score, c.Eligible = s, true
		if best < 0 || s < d.Candidates[best].Score || (s == d.Candidates[best].Score && v.ID < views[best].ID) {
			best = i
		}
	}
	if best < 0 {
		d.Reason = "no bucket views"
		return d
	}
	d.Bucket = views[best].ID
	d.Reason = ReasonOffRange
	if d.Bucket == d.StrictBucket {
		d.Reason = ReasonInRange
	}
	return d
}

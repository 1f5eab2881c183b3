package bucket

import (
	"math"
	"testing"

	"github.com/pdemu/pdemu/workload"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// threeBuckets is the design document's layout.
var threeBuckets = []BucketConfig{
	{Name: "short", Range: Range{0, 32768}, Instances: 3},
	{Name: "medium", Range: Range{32769, 81920}, Instances: 4},
	{Name: "long", Range: Range{81921, 131072}, Instances: 3},
}

// idleViews are views of idle buckets with nothing cached.
func idleViews(bs []BucketConfig) []BucketView {
	v := make([]BucketView, len(bs))
	for i, b := range bs {
		v[i] = BucketView{ID: i, Name: b.Name, Min: b.Range.Min, Max: b.Range.Max, Instances: b.Instances,
			KVTotal: int64(b.Instances) * 100000}
	}
	return v
}

func req(inputLen, nblocks int) *workload.Request {
	return &workload.Request{ID: 1, InputLen: inputLen, OutputLen: 100, Blocks: chain(7, nblocks), BlockTokens: 16}
}

func TestGlobalPolicies(t *testing.T) {
	assert.Equal(t, []string{"bucket_score", "strict_input_length"}, GlobalPolicies())
	for _, p := range GlobalPolicies() {
		g, err := NewGlobal(GlobalConfig{Policy: p, LengthPenaltyWeight: 1, LoadWeight: 1, CacheWeight: 1}, threeBuckets)
		require.NoError(t, err)
		assert.Equal(t, p, g.Name())
	}
}

func TestNewGlobalErrors(t *testing.T) {
	ok := GlobalConfig{Policy: PolicyBucketScore, LengthPenaltyWeight: 1, LoadWeight: 1, CacheWeight: 1}
	for _, tc := range []struct {
		name    string
		cfg     GlobalConfig
		buckets []BucketConfig
		want    string
	}{
		{"unknown policy", GlobalConfig{Policy: "strict"}, threeBuckets, "unknown global policy"},
		{"no buckets", ok, nil, "at least one bucket"},
		{"negative weight", GlobalConfig{Policy: PolicyBucketScore, LoadWeight: -1}, threeBuckets, "LoadWeight"},
		{"NaN weight", GlobalConfig{Policy: PolicyBucketScore, CacheWeight: math.NaN()}, threeBuckets, "CacheWeight"},
		{"infinite weight", GlobalConfig{Policy: PolicyBucketScore, LengthPenaltyWeight: math.Inf(1)}, threeBuckets, "LengthPenaltyWeight"},
		{"min above max", ok, []BucketConfig{{Name: "a", Range: Range{5, 4}, Instances: 1}}, "bad range"},
		{"negative min", ok, []BucketConfig{{Name: "a", Range: Range{-1, 4}, Instances: 1}}, "bad range"},
		{"no instances", ok, []BucketConfig{{Name: "a", Range: Range{0, 4}}}, "0 instances"},
		{"overlap", ok, []BucketConfig{{Name: "a", Range: Range{0, 10}, Instances: 1}, {Name: "b", Range: Range{10, 20}, Instances: 1}}, "bucket 1 (b) [10, 20] overlaps bucket 0 (a)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewGlobal(tc.cfg, tc.buckets)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// Gaps are the caller's business.
	_, err := NewGlobal(ok, []BucketConfig{{Name: "a", Range: Range{0, 10}, Instances: 1}, {Name: "b", Range: Range{20, 30}, Instances: 1}})
	assert.NoError(t, err)
}

func TestStrictInputLength(t *testing.T) {
	g, err := NewGlobal(GlobalConfig{Policy: PolicyStrictInputLength}, threeBuckets)
	require.NoError(t, err)
	views := idleViews(threeBuckets)
	for _, tc := range []struct {
		name   string
		n      int
		bucket int
		reason string
	}{
		{"short", 1000, 0, ReasonInRange},
		{"zero", 0, 0, ReasonInRange},
		{"short edge", 32768, 0, ReasonInRange},
		{"medium edge", 32769, 1, ReasonInRange},
		{"medium", 50000, 1, ReasonInRange},
		{"long", 100000, 2, ReasonInRange},
		{"long edge", 131072, 2, ReasonInRange},
		{"too long", 131073, -1, "no bucket covers input length 131073"},
		{"negative", -1, -1, "no bucket covers input length -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := g.Route(req(tc.n, 4), views, 0)
			assert.Equal(t, tc.bucket, d.Bucket)
			assert.Equal(t, tc.bucket, d.StrictBucket)
			assert.Equal(t, tc.reason, d.Reason)
			assert.Equal(t, PolicyStrictInputLength, d.Mode)
			require.Len(t, d.Candidates, 3)
			for i, c := range d.Candidates {
				assert.Equal(t, views[i], c.View)
				assert.Equal(t, i == tc.bucket, c.Eligible, "candidate %d", i)
			}
		})
	}
	// Load and cache do not move strict.
	hot := idleViews(threeBuckets)
	hot[0].QueueSum, hot[0].KVUsed, hot[2].PredictedPrefix = 1000, hot[0].KVTotal, 4
	assert.Equal(t, 0, g.Route(req(1000, 4), hot, 0).Bucket)

	// A gap between buckets is a run-time failure too.
	gap := []BucketConfig{{Name: "a", Range: Range{0, 10}, Instances: 1}, {Name: "b", Range: Range{20, 30}, Instances: 1}}
	g2, err := NewGlobal(GlobalConfig{Policy: PolicyStrictInputLength}, gap)
	require.NoError(t, err)
	d := g2.Route(req(15, 1), idleViews(gap), 0)
	assert.Equal(t, -1, d.Bucket)
	assert.Equal(t, "no bucket covers input length 15", d.Reason)

	// The strict bucket without a view cannot be chosen.
	d = g.Route(req(1000, 1), views[1:], 0)
	assert.Equal(t, -1, d.Bucket)
	assert.Equal(t, 0, d.StrictBucket)
	assert.Contains(t, d.Reason, "no view of bucket 0 (short)")
}

func TestBucketScoreTerms(t *testing.T) {
	for _, tc := range []struct {
		n, lo, hi int
		want      float64
	}{
		{100, 0, 200, 0},
		{0, 0, 200, 0},
		{200, 0, 200, 0},
		{300, 0, 200, 0.5},
		{40000, 0, 32768, float64(40000-32768) / 32768},
		{100, 32769, 81920, float64(32769-100) / 32769},
		{0, 32769, 81920, 1},
		{131072, 0, 32768, 3},
		{5, 0, 0, 5}, // an edge of 0 counts as 1
	} {
		assert.InDelta(t, tc.want, LengthPenalty(tc.n, tc.lo, tc.hi), 1e-12, "%+v", tc)
	}

	assert.Equal(t, 0.0, BucketLoad(BucketView{Instances: 4}))
	assert.Equal(t, 0.5, BucketLoad(BucketView{Instances: 4, KVUsed: 50, KVTotal: 100}))
	assert.Equal(t, 0.5+2.0, BucketLoad(BucketView{Instances: 4, KVUsed: 50, KVTotal: 100, QueueSum: 8, QueueMax: 5, Active: 99}))
	assert.Equal(t, 3.0, BucketLoad(BucketView{QueueSum: 3}), "0 instances count as 1")

	assert.Equal(t, 1.0, Miss(0, 10))
	assert.Equal(t, 0.75, Miss(1, 4))
	assert.Equal(t, 0.0, Miss(4, 4))
	assert.Equal(t, 0.0, Miss(9, 4), "clamped")
	assert.Equal(t, 1.0, Miss(0, 0), "no blocks: nothing can hit")
}

func TestBucketScore(t *testing.T) {
	cfg := GlobalConfig{Policy: PolicyBucketScore, LengthPenaltyWeight: 1, LoadWeight: 1, CacheWeight: 1}
	g, err := NewGlobal(cfg, threeBuckets)
	require.NoError(t, err)

	t.Run("idle buckets follow the length", func(t *testing.T) {
		for n, want := range map[int]int{1000: 0, 50000: 1, 100000: 2, 200000: 2} {
			d := g.Route(req(n, 8), idleViews(threeBuckets), 0)
			assert.Equal(t, want, d.Bucket, "n=%d", n)
		}
		d := g.Route(req(200000, 8), idleViews(threeBuckets), 0)
		assert.Equal(t, -1, d.StrictBucket, "uncovered lengths are fine under bucket_score")
		assert.Equal(t, ReasonOffRange, d.Reason)
	})

	t.Run("formula", func(t *testing.T) {
		views := idleViews(threeBuckets)
		views[1].KVUsed, views[1].QueueSum, views[1].PredictedPrefix = views[1].KVTotal/4, 2, 6
		r := req(40000, 8)
		d := g.Route(r, views, 0)
		require.Len(t, d.Candidates, 3)
		want := []float64{
			float64(40000-32768)/32768 + 0 + 1,
			0 + (0.25 + 2.0/4) + (1 - 6.0/8),
			float64(81921-40000)/81921 + 0 + 1,
		}
		for i, c := range d.Candidates {
			assert.InDelta(t, want[i], c.Score, 1e-12, "bucket %d", i)
			assert.True(t, c.Eligible)
		}
		assert.Equal(t, 1, d.Bucket)
		assert.Equal(t, 1, d.StrictBucket)
		assert.Equal(t, ReasonInRange, d.Reason)
	})

	t.Run("load moves a short request to medium", func(t *testing.T) {
		views := idleViews(threeBuckets)
		views[0].KVUsed, views[0].QueueSum = views[0].KVTotal, 3 // full, one waiting per instance
		d := g.Route(req(30000, 8), views, 0)
		assert.Equal(t, 1, d.Bucket)
		assert.Equal(t, 0, d.StrictBucket)
		assert.Equal(t, ReasonOffRange, d.Reason)
	})

	t.Run("cache moves a medium request to long", func(t *testing.T) {
		views := idleViews(threeBuckets)
		views[2].PredictedPrefix = 8 // the whole prompt is cached in the long bucket
		d := g.Route(req(80000, 8), views, 0)
		assert.Equal(t, 2, d.Bucket, "penalty %.3f < miss 1", LengthPenalty(80000, 81921, 131072))
		assert.Equal(t, 1, d.StrictBucket)

		// Without the cache weight the length wins again.
		g0, err := NewGlobal(GlobalConfig{Policy: PolicyBucketScore, LengthPenaltyWeight: 1, LoadWeight: 1}, threeBuckets)
		require.NoError(t, err)
		assert.Equal(t, 1, g0.Route(req(80000, 8), views, 0).Bucket)
	})

	t.Run("ties go to the lower id", func(t *testing.T) {
		g0, err := NewGlobal(GlobalConfig{Policy: PolicyBucketScore}, threeBuckets)
		require.NoError(t, err)
		views := idleViews(threeBuckets)
		views[0], views[2] = views[2], views[0] // id order differs from view order
		d := g0.Route(req(100000, 8), views, 0)
		assert.Equal(t, 0, d.Bucket)
		for _, c := range d.Candidates {
			assert.Equal(t, 0.0, c.Score)
		}
	})

	t.Run("views of unknown buckets are not eligible", func(t *testing.T) {
		views := append(idleViews(threeBuckets), BucketView{ID: 7, Instances: 1})
		d := g.Route(req(1000, 8), views, 0)
		assert.False(t, d.Candidates[3].Eligible)
		assert.Equal(t, 0, d.Bucket)
		d = g.Route(req(1000, 8), nil, 0)
		assert.Equal(t, -1, d.Bucket)
		assert.Equal(t, "no bucket views", d.Reason)
	})
}

package cluster

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy/bucket"
	"github.com/pdemu/pdemu/workload"
)

func genBucketDecision(t *rapid.T) (*gpu.Job, bucket.GlobalDecision, *bucket.LocalDecision) {
	job := &gpu.Job{Req: &workload.Request{ID: rapid.Int64().Draw(t, "id"), InputLen: rapid.Int().Draw(t, "in")}}
	score := rapid.OneOf(genFloat(), rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}))
	if rapid.IntRange(0, 9).Draw(t, "finite") > 0 {
		score = genFloat()
	}
	dur := rapid.OneOf(rapid.SampledFrom([]time.Duration{0, 1, -1, time.Millisecond, 1500 * time.Microsecond}),
		rapid.Map(rapid.Int64(), func(n int64) time.Duration { return time.Duration(n) }))
	g := bucket.GlobalDecision{Bucket: rapid.IntRange(-1, 3).Draw(t, "bucket"), StrictBucket: rapid.IntRange(-1, 3).Draw(t, "strict"),
		Mode: genString().Draw(t, "gmode"), Reason: genString().Draw(t, "greason")}
	for i := range rapid.IntRange(0, 4).Draw(t, "buckets") {
		g.Candidates = append(g.Candidates, bucket.BucketCandidate{View: bucket.BucketView{ID: rapid.IntRange(0, 3).Draw(t, "bid"),
			Name: genString().Draw(t, "bname"), QueueSum: rapid.Int().Draw(t, "qs"), QueueMax: rapid.Int().Draw(t, "qm"),
			KVUsed: rapid.Int64().Draw(t, "kvu"), KVTotal: rapid.Int64().Draw(t, "kvt"), Active: rapid.Int().Draw(t, "act"),
			PredictedPrefix: rapid.Int().Draw(t, "pp"), DrainTime: dur.Draw(t, "drain")},
			Score: score.Draw(t, "bscore"), Eligible: rapid.Bool().Draw(t, "el")})
		_ = i
	}
	if rapid.Bool().Draw(t, "noLocal") {
		return job, g, nil
	}
	l := &bucket.LocalDecision{Instance: rapid.IntRange(-1, 8).Draw(t, "inst"), Mode: genString().Draw(t, "lmode"),
		Reason: genString().Draw(t, "lreason"), ProbeLatency: dur.Draw(t, "probe")}
	for range rapid.IntRange(0, 5).Draw(t, "insts") {
		l.Candidates = append(l.Candidates, bucket.InstanceCandidate{View: bucket.InstanceView{Index: rapid.Int().Draw(t, "idx"),
			Queue: rapid.Int().Draw(t, "q"), Running: rapid.Int().Draw(t, "run"), KVUsed: rapid.Int64().Draw(t, "ikv")},
			Score: score.Draw(t, "iscore"), PredictedPrefix: rapid.Int().Draw(t, "ipp"), Probed: rapid.Bool().Draw(t, "probed")})
	}
	return job, g, l
}

// TestAppendBucketLogMatchesJSON: routeLog writes json.Marshal's bytes of
// the line's struct (the encoding before the hand-rolled one) for any
// decision, the error line included (a non-finite score).
func TestAppendBucketLogMatchesJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		job, g, l := genBucketDecision(t)
		want := marshalBucketLog(newBucketLog(job, g, l))
		require.Equal(t, string(want), string(routeLog(job, g, l)))
	})
}

func BenchmarkBucketRouteLog(b *testing.B) {
	job := &gpu.Job{Req: &workload.Request{ID: 12345, InputLen: 40960}}
	g := bucket.GlobalDecision{Bucket: 0, StrictBucket: 0, Mode: "strict_input_length", Reason: "in-range",
		Candidates: []bucket.BucketCandidate{{View: bucket.BucketView{Name: "all", QueueSum: 3, QueueMax: 2, KVUsed: 123456,
			KVTotal: 368416, Active: 9, PredictedPrefix: 311, DrainTime: 1234567 * time.Nanosecond}, Eligible: true}}}
	l := &bucket.LocalDecision{Instance: 2, Mode: "cache_aware_dp", Reason: "cache-hit"}
	for i := range 4 {
		l.Candidates = append(l.Candidates, bucket.InstanceCandidate{View: bucket.InstanceView{Index: i, Queue: i, Running: 2 * i,
			KVUsed: int64(30000 * i)}, Score: float64(100 * i), PredictedPrefix: 100 * i})
	}
	for _, enc := range []struct {
		name string
		f    func() []byte
	}{
		{"append", func() []byte { return routeLog(job, g, l) }},
		{"json", func() []byte { return marshalBucketLog(newBucketLog(job, g, l)) }},
	} {
		b.Run(enc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				enc.f()
			}
		})
	}
}

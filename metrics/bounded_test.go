package metrics

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// boundedTallyOf is TallyOf(recs) bounded for slo.
func boundedTallyOf(slo SLO, recs []Record) *Tally {
	b := NewTally()
	b.Bound(slo)
	for i := range recs {
		b.Add(&recs[i])
	}
	return b
}

// A bounded Tally is the exact one while at most BoundExact requests
// completed: the same summary, buckets and SLO, byte for byte.
func TestBoundedExactUpToLimit(t *testing.T) {
	slo := SLO{TTFT: 5 * time.Millisecond, TPOT: 3 * time.Millisecond, Attainment: 0.9}
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t)
		exact := TallyOf(recs)
		b := boundedTallyOf(slo, recs)
		require.False(t, b.Estimated())
		se, sb := exact.Summary(), b.Summary()
		assert.Equal(t, jsonOf(t, se), jsonOf(t, sb))
		assert.Equal(t, jsonOf(t, exact.Buckets()), jsonOf(t, b.Buckets()))
		assert.Equal(t, jsonOf(t, exact.SLO(slo, se)), jsonOf(t, b.SLO(slo, sb)))
	})
}

// Past BoundExact, the bounded Tally's counts, means, maxima and SLO
// counts are the exact ones, its quantiles within SketchAccuracy of the
// exact ones, and the summary says they are estimates.
func TestBoundedSketchAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3 * BoundExact
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.ID, r.SessionIdx, r.Session = int64(i), int32(i/8), "s"
		r.Arrival = time.Duration(i) * 50 * time.Millisecond
		r.Mode, r.State, r.TPOT = "Direct", StateCompleted, -1
		if i%97 == 0 {
			r.Failed, r.State, r.Reason, r.TTFT, r.E2E = true, StateFailed, "x", -1, -1
			continue
		}
		// Log-normal-ish TTFTs from 1 ms to seconds.
		r.TTFT = time.Duration(float64(time.Millisecond) * (1 + rng.ExpFloat64()*rng.ExpFloat64()*200))
		r.E2E = r.TTFT + time.Duration(rng.IntN(int(time.Second)))
		r.TPOT = time.Duration(rng.IntN(int(40 * time.Millisecond)))
		r.HasParts = true
		r.Parts.Prefill = r.TTFT / 3
		r.Parts.FirstToken = r.TTFT - r.Parts.Prefill
	}
	slo := SLO{TTFT: 200 * time.Millisecond, Attainment: 0.9}
	exact := TallyOf(recs)
	b := boundedTallyOf(slo, recs)
	require.True(t, b.Estimated())
	se, sb := exact.Summary(), b.Summary()
	require.NotNil(t, sb.Estimates)
	assert.Nil(t, se.Estimates)
	assert.Equal(t, se.Requests, sb.Requests)
	rel := func(name string, want, got float64) {
		assert.InDelta(t, want, got, SketchAccuracy*want+0.001, name)
	}
	for _, c := range []struct {
		name      string
		want, got Quantiles
	}{{"ttft", se.TTFT, sb.TTFT}, {"e2e", se.E2E, sb.E2E}} {
		rel(c.name+" p50", c.want.P50, c.got.P50)
		rel(c.name+" p90", c.want.P90, c.got.P90)
		rel(c.name+" p99", c.want.P99, c.got.P99)
		assert.Equal(t, c.want.Mean, c.got.Mean, c.name+" mean")
		assert.Equal(t, c.want.Max, c.got.Max, c.name+" max")
	}
	rel("tpot p999", se.TPOT.P999, sb.TPOT.P999)
	rel("prefill p99", se.TTFTParts.Prefill.P99, sb.TTFTParts.Prefill.P99)
	// The tail: about 1 % of the requests, their parts' means close.
	assert.InDelta(t, se.TTFTTail.Requests, sb.TTFTTail.Requests, 0.2*float64(se.TTFTTail.Requests))
	assert.Equal(t, se.TTFTTail.Dominant, sb.TTFTTail.Dominant)
	ee, eb := exact.SLO(slo, se), b.SLO(slo, sb)
	assert.Equal(t, ee.Met, eb.Met)
	assert.Equal(t, ee.Missed, eb.Missed)
	assert.Equal(t, ee.Sessions, eb.Sessions)
	assert.Equal(t, ee.SessionsMet, eb.SessionsMet)
	assert.InDelta(t, ee.FirstQuarterTTFTMs, eb.FirstQuarterTTFTMs, 0.05*ee.FirstQuarterTTFTMs)
	assert.InDelta(t, ee.LastQuarterTTFTMs, eb.LastQuarterTTFTMs, 0.05*ee.LastQuarterTTFTMs)

	// Forgetting sessions keeps their SLO sessions and totals.
	for s := range int32(100) {
		b.Forget(s)
	}
	assert.Equal(t, 100, b.Forgotten())
	assert.Equal(t, exact.NumSessions()-100, b.NumSessions())
	ef := b.SLO(slo, sb)
	assert.Equal(t, ee.Sessions, ef.Sessions)
	assert.Equal(t, ee.SessionsMet, ef.SessionsMet)
}

// An exact Tally forgets nothing.
func TestExactTallyForgetsNothing(t *testing.T) {
	tl := NewTally()
	tl.Add(&Record{ID: 0, SessionIdx: 3, Session: "x", State: StateCompleted, Mode: "Direct", TPOT: -1})
	tl.Forget(3)
	assert.Equal(t, 1, tl.NumSessions())
	assert.Zero(t, tl.Forgotten())
}

func BenchmarkBoundedTallyAdd(b *testing.B) {
	r := Record{SessionIdx: 1, Session: "s", State: StateCompleted, Mode: "Direct", TTFT: 30 * time.Millisecond, E2E: time.Second, TPOT: 20 * time.Millisecond, HasParts: true}
	r.Parts.Prefill = 30 * time.Millisecond
	t := NewTally()
	t.Bound(SLO{})
	b.ReportAllocs()
	for i := range b.N {
		r.ID = int64(i)
		r.TTFT = time.Duration(i%1000) * time.Millisecond
		t.Add(&r)
	}
}

func BenchmarkExactTallyAdd(b *testing.B) {
	r := Record{SessionIdx: 1, Session: "s", State: StateCompleted, Mode: "Direct", TTFT: 30 * time.Millisecond, E2E: time.Second, TPOT: 20 * time.Millisecond, HasParts: true}
	r.Parts.Prefill = 30 * time.Millisecond
	t := NewTally()
	b.ReportAllocs()
	for i := range b.N {
		r.ID = int64(i)
		r.TTFT = time.Duration(i%1000) * time.Millisecond
		t.Add(&r)
	}
}

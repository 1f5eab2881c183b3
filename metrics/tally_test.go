package metrics

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// genRecords draws ended records (ids dense, in random end order) with
// ties, failures, buckets, missing parts and undefined TPOTs.
func genRecords(t *rapid.T) []Record {
	n := rapid.IntRange(0, 60).Draw(t, "n")
	recs := make([]Record, n)
	modes := []string{"Direct", "Seed", "Reseed", "Fallback", "Vanilla", "Fused"}
	for i := range recs {
		r := &recs[i]
		r.ID = int64(i)
		r.SessionIdx = int32(rapid.IntRange(0, 4).Draw(t, "sess"))
		r.Session = []string{"a", "b", "c", "d", "e"}[r.SessionIdx]
		r.Arrival = time.Duration(rapid.IntRange(0, 40_000).Draw(t, "arr")) * time.Millisecond / 2
		r.Mode = rapid.SampledFrom(modes).Draw(t, "mode")
		r.P = rapid.SampledFrom([]string{"", "p0", "p1"}).Draw(t, "p")
		r.D = rapid.SampledFrom([]string{"", "d0", "d1", "f0"}).Draw(t, "d")
		r.InputTokens = rapid.IntRange(0, 9000).Draw(t, "in")
		r.OutputTokens = rapid.IntRange(1, 500).Draw(t, "out")
		r.CachedTokens = rapid.IntRange(0, r.InputTokens).Draw(t, "cached")
		r.LengthBucketMatch = rapid.Bool().Draw(t, "match")
		if rapid.Bool().Draw(t, "bucketed") {
			r.Bucket = rapid.SampledFrom([]string{"", "short", "long"}).Draw(t, "bucket")
			r.BucketPolicy = "bucket_score"
		}
		r.TTFT, r.E2E, r.TPOT = -1, -1, -1
		if rapid.IntRange(0, 5).Draw(t, "fail") == 0 {
			r.Failed, r.State = true, StateFailed
			r.Reason = rapid.SampledFrom([]string{"x", "y"}).Draw(t, "reason")
			continue
		}
		r.State = StateCompleted
		// Coarse values make ties (and equal rounded ms at the p99).
		r.TTFT = time.Duration(rapid.IntRange(0, 50).Draw(t, "ttft")) * 250 * time.Microsecond
		r.E2E = r.TTFT + time.Duration(rapid.IntRange(0, 1e9).Draw(t, "dec"))
		if rapid.Bool().Draw(t, "tpot") {
			r.TPOT = time.Duration(rapid.IntRange(0, 1e7).Draw(t, "tpotv"))
		}
		if r.HasParts = rapid.IntRange(0, 7).Draw(t, "noparts") != 0; r.HasParts {
			left := r.TTFT
			r.Parts.Route = time.Duration(rapid.Int64Range(0, int64(left)).Draw(t, "route"))
			left -= r.Parts.Route
			r.Parts.Prefill = time.Duration(rapid.Int64Range(0, int64(left)).Draw(t, "prefill"))
			r.Parts.FirstToken = left - r.Parts.Prefill
		}
	}
	return recs
}

func jsonOf(t *rapid.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTallyEqualsRecordFunctions: a Tally fed the records in any order
// gives what Summarize, SummarizeBuckets, AttachWorkers, Recover and
// WriteRouterWindows compute from all the records in id order.
func TestTallyEqualsRecordFunctions(t *testing.T) {
	defer func(n int) { partsOnePass = n }(partsOnePass)
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t)
		// The TTFT parts in one pass, or one pass per part (large runs).
		partsOnePass = rapid.SampledFrom([]int{0, 1 << 18}).Draw(t, "partsOnePass")
		order := rapid.Permutation(recs).Draw(t, "end order")
		tl := NewTally(3*time.Second, 7500*time.Millisecond, 0)
		for i := range order {
			tl.Add(&order[i])
		}
		want := jsonOf(t, Summarize(recs))
		if got := jsonOf(t, tl.Summary()); got != want {
			t.Fatalf("summary\n got %s\nwant %s", got, want)
		}
		// Summary and SLO share one scratch slice: again, after an SLO.
		_ = tl.SLO(SLO{TTFT: time.Millisecond, Attainment: 0.9}, Summary{EmulatedSeconds: 10})
		if got := jsonOf(t, tl.Summary()); got != want {
			t.Fatalf("summary after SLO\n got %s\nwant %s", got, want)
		}
		if got, want := jsonOf(t, tl.Buckets()), jsonOf(t, SummarizeBuckets(recs)); got != want {
			t.Fatalf("buckets\n got %s\nwant %s", got, want)
		}
		workers := func() []WorkerSummary {
			return []WorkerSummary{{Name: "p0", Kind: "prefill"}, {Name: "p1", Kind: "prefill"},
				{Name: "d0", Kind: "decode"}, {Name: "d1", Kind: "decode"}, {Name: "f0", Kind: "fused"}}
		}
		var a, b Summary
		tl.AttachWorkers(&a, workers())
		AttachWorkers(&b, workers(), recs)
		if got, want := jsonOf(t, a), jsonOf(t, b); got != want {
			t.Fatalf("workers\n got %s\nwant %s", got, want)
		}
		faults := func() []FaultRecord {
			return []FaultRecord{{At: 3 * time.Second}, {At: 7500 * time.Millisecond}, {At: 0}}
		}
		fa, fb := faults(), faults()
		tl.Recover(fa)
		referenceRecover(fb, recs)
		if got, want := jsonOf(t, fa), jsonOf(t, fb); got != want {
			t.Fatalf("recover\n got %s\nwant %s", got, want)
		}
		ev := NewRouterRecorder()
		ev.Event(2500*time.Millisecond, RouterMigration)
		window := time.Duration(rapid.IntRange(1, 3).Draw(t, "window")) * time.Second
		var wa, wb bytes.Buffer
		if err := WriteRouterWindowsOf(&wa, tl.Arrivals(), ev, window); err != nil {
			t.Fatal(err)
		}
		err := writeRouterWindows(&wb, func(at func(time.Duration) (req, direct *int)) {
			for _, rec := range recs { // the per-record count
				req, direct := at(rec.Arrival)
				*req++
				if !rec.Failed && rec.State != StateUnfinished && rec.Mode == "Direct" {
					*direct++
				}
			}
		}, ev, window)
		if err != nil {
			t.Fatal(err)
		}
		if wa.String() != wb.String() {
			t.Fatalf("router windows\n got %s\nwant %s", wa.String(), wb.String())
		}
	})
}

// TestIDSet: the low-water-mark set answers as a map would.
func TestIDSet(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := rapid.SliceOfDistinct(rapid.Int64Range(0, 40), func(x int64) int64 { return x }).Draw(t, "ids")
		var s idSet
		ref := map[int64]bool{}
		for _, id := range ids {
			s.add(id)
			ref[id] = true
			for q := int64(-1); q <= 41; q++ {
				if s.has(q) != ref[q] {
					t.Fatalf("has(%d) = %v after %v", q, s.has(q), ids)
				}
			}
		}
	})
}

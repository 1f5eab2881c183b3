package metrics

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// referenceRecover is Recover as it was computed from every record kept
// (sorted by arrival, then id; the TTFTs summed as float64s in that
// order): the specification the incremental recovery must meet.
func referenceRecover(faults []FaultRecord, recs []Record) {
	rs := make([]RecoverRow, len(recs))
	for i := range recs {
		rs[i] = recoverRow(&recs[i])
	}
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Arrival != rs[j].Arrival {
			return rs[i].Arrival < rs[j].Arrival
		}
		return rs[i].ID < rs[j].ID
	})
	level := func(lo, hi time.Duration) (share, ttft float64, n int) {
		i := sort.Search(len(rs), func(i int) bool { return rs[i].Arrival >= lo })
		var direct int
		var sum float64
		for ; i < len(rs) && rs[i].Arrival < hi; i++ {
			if rs[i].Failed {
				continue
			}
			n++
			if rs[i].Direct {
				direct++
			}
			sum += float64(rs[i].TTFT)
		}
		if n == 0 {
			return 0, 0, 0
		}
		return float64(direct) / float64(n), sum / float64(n), n
	}
	var last time.Duration
	if len(rs) > 0 {
		last = rs[len(rs)-1].Arrival
	}
	for i := range faults {
		f := &faults[i]
		share0, ttft0, n0 := level(f.At-RecoveryWindow, f.At)
		f.Recovery = 0
		if n0 == 0 {
			continue
		}
		for lo := f.At; lo <= last; lo += RecoveryWindow / 10 {
			share, ttft, n := level(lo, lo+RecoveryWindow)
			if n > 0 && !(share >= RecoveryShare*share0 && ttft <= RecoveryTTFT*ttft0) {
				f.Recovery = lo + RecoveryWindow - f.At
				if lo+RecoveryWindow > last {
					f.Recovery = -1
				}
			}
		}
	}
}

// TestRecoveryIsIncremental: requests released in arrival order and ended
// in any order (each after its own lifetime), tallied as a streaming
// collector tallies them (the watermark from the release order), give
// every fault the recovery the reference computes from all the records;
// and the recovery keeps only the slots between the watermark and the
// latest arrival (plus a window), not one per request.
func TestRecoveryIsIncremental(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 800).Draw(t, "n")
		recs := make([]Record, n)
		ends := make([]time.Duration, n)
		arr := time.Duration(0)
		for i := range recs {
			// Released in id order, arrivals non-decreasing (ties too).
			arr += time.Duration(rapid.IntRange(0, 200).Draw(t, "gap")) * time.Millisecond
			recs[i].ID, recs[i].Arrival = int64(i), arr
		}
		// A degraded period (slower, fewer Direct) makes dips to recover from.
		badFrom := arr * time.Duration(rapid.IntRange(20, 80).Draw(t, "bad from %")) / 100
		badTo := badFrom + time.Duration(rapid.IntRange(5_000, 30_000).Draw(t, "bad for"))*time.Millisecond
		for i := range recs {
			r := &recs[i]
			r.State = StateCompleted
			r.Mode, r.TTFT = "Direct", time.Duration(100+rapid.IntRange(0, 2).Draw(t, "ttft")*10)*time.Millisecond
			if rapid.IntRange(0, 19).Draw(t, "reseed") == 0 {
				r.Mode = "Reseed"
			}
			if r.Arrival >= badFrom && r.Arrival < badTo {
				r.Mode = rapid.SampledFrom([]string{"Direct", "Reseed", "Seed"}).Draw(t, "bad mode")
				r.TTFT *= time.Duration(rapid.IntRange(1, 3).Draw(t, "bad ttft"))
			}
			if rapid.IntRange(0, 6).Draw(t, "fail") == 0 {
				r.Failed, r.State, r.TTFT = true, StateFailed, -1
			}
			// Most requests are short; a few stay long.
			life := time.Duration(rapid.IntRange(0, 3000).Draw(t, "life")) * time.Millisecond
			if rapid.IntRange(0, 20).Draw(t, "long") == 0 {
				life *= 30
			}
			ends[i] = r.Arrival + life
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return int(ends[a] - ends[b]) })
		var ats []time.Duration
		for range rapid.IntRange(0, 4).Draw(t, "faults") {
			at := time.Duration(rapid.IntRange(-5000, int(arr/time.Millisecond)+5000).Draw(t, "at")) * time.Millisecond
			if rapid.Bool().Draw(t, "at the dip") {
				at = badFrom - time.Duration(rapid.IntRange(0, 3000).Draw(t, "before"))*time.Millisecond
			}
			ats = append(ats, at)
		}
		tl := NewTally(ats...)
		var mark releaseMark
		maxKept := 0
		for _, i := range order {
			tl.Add(&recs[i])
			if tl.TracksFaults() && mark.end(int64(i), recs[i].Arrival) {
				tl.Watermark(mark.at)
			}
			if tl.rec != nil {
				// Per fault: the slots from the watermark's first
				// open window to the latest arrival.
				open := int((tl.rec.last-mark.at)/recoverySlot) + 2*recoveryPerWind + 2
				if k := tl.rec.kept(); k > open*len(tl.rec.faults) {
					t.Fatalf("%d slots kept, watermark %v, last arrival %v", k, mark.at, tl.rec.last)
				}
				maxKept = max(maxKept, tl.rec.kept())
			}
		}
		got := make([]FaultRecord, len(ats))
		want := make([]FaultRecord, len(ats))
		for i, at := range ats {
			got[i].At, want[i].At = at, at
		}
		tl.Recover(got)
		referenceRecover(want, recs)
		for i := range got {
			if got[i].Recovery != want[i].Recovery {
				t.Fatalf("fault at %v: recovery %v, want %v", ats[i], got[i].Recovery, want[i].Recovery)
			}
		}
		batch := make([]FaultRecord, len(ats))
		for i, at := range ats {
			batch[i].At = at
		}
		Recover(batch, recs)
		for i := range batch {
			if batch[i].Recovery != want[i].Recovery {
				t.Fatalf("Recover: fault at %v: recovery %v, want %v", ats[i], batch[i].Recovery, want[i].Recovery)
			}
		}
	})
}

// TestRecoveryMemoryFlat: a long run of short requests with two faults
// keeps a bounded number of slots however many requests it tallies.
func TestRecoveryMemoryFlat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tl := NewTally(5*time.Second, 40*time.Second)
	var mark releaseMark
	type live struct {
		i   int64
		r   Record
		end time.Duration
	}
	var inflight []live
	maxKept := 0
	for i := int64(0); i < 200000; i++ {
		now := time.Duration(i) * 5 * time.Millisecond // 200 requests per emulated second
		r := Record{ID: i, Arrival: now, State: StateCompleted, Mode: "Direct", TTFT: time.Duration(rng.IntN(100)) * time.Millisecond}
		inflight = append(inflight, live{i, r, now + time.Duration(rng.IntN(2000))*time.Millisecond})
		keep := inflight[:0]
		for _, l := range inflight {
			if l.end <= now {
				tl.Add(&l.r)
				if mark.end(l.i, l.r.Arrival) {
					tl.Watermark(mark.at)
				}
				continue
			}
			keep = append(keep, l)
		}
		inflight = keep
		maxKept = max(maxKept, tl.rec.kept())
	}
	// Two faults, each at most a window and the in-flight span (2 s) of
	// slots, whatever the 1,000 s of arrivals.
	t.Logf("max slots kept %d", maxKept)
	if maxKept > 2*(2*recoveryPerWind+4) {
		t.Fatalf("kept up to %d slots", maxKept)
	}
}

// TestReleaseMarkBreaksOnATwiceEndedNumber: a release number that ends
// twice (a job copied without its number) stops the watermark for good
// (the recoveries stay exact, unbounded), never moves it on a wrong basis.
func TestReleaseMarkBreaksOnATwiceEndedNumber(t *testing.T) {
	var m releaseMark
	if !m.end(0, time.Second) || m.at != time.Second {
		t.Fatalf("first end: %+v", m)
	}
	if m.end(2, 3*time.Second) {
		t.Fatal("2 ended before 1: no move")
	}
	if m.end(0, 5*time.Second) {
		t.Fatal("0 again: no move")
	}
	if m.end(1, 2*time.Second) || m.end(3, 4*time.Second) {
		t.Fatal("broken: never moves again")
	}
	if m.at != time.Second {
		t.Fatalf("watermark %v, want 1s", m.at)
	}
	var n releaseMark
	n.end(1, time.Second)
	if n.end(1, time.Second) || n.end(0, 0) {
		t.Fatal("1 twice in above: broken")
	}
}

package metrics

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestPartsListRoundTrip: the compact parts read back as the seven
// varint lists (durs, the reference) stored them, whether or not they
// add up to the TTFT (and when the sum wraps), across chunk boundaries.
func TestPartsListRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var l partsList
		var ref [7]durs
		var ttfts durs
		n := rapid.IntRange(0, 5000).Draw(t, "n")
		for range n {
			var p [7]time.Duration
			for k := range p {
				switch rapid.IntRange(0, 3).Draw(t, "kind") {
				case 0, 1: // zero
				case 2:
					p[k] = time.Duration(rapid.Int64Range(-1e10, 1e10).Draw(t, "v"))
				default:
					p[k] = time.Duration(rapid.Int64Range(math.MinInt64, math.MaxInt64).Draw(t, "big"))
				}
			}
			var sum time.Duration
			for _, d := range p {
				sum += d
			}
			ttft := sum
			if rapid.IntRange(0, 3).Draw(t, "mismatch") == 0 {
				ttft += time.Duration(rapid.Int64Range(-5, 5).Draw(t, "off"))
			}
			l.add(ttft, &p)
			ttfts.add(ttft)
			for k := range p {
				ref[k].add(p[k])
			}
		}
		it, tt := l.iter(), ttfts.iter()
		var its [7]dursIter
		for k := range its {
			its[k] = ref[k].iter()
		}
		for i := range n {
			got := it.next(tt.next())
			for k := range got {
				if want := its[k].next(); got[k] != want {
					t.Fatalf("row %d part %d = %d, want %d", i, k, got[k], want)
				}
			}
		}
	})
}

// BenchmarkPartsList: a million requests' parts as the 1P3D run has them
// (mostly zero, summing to the TTFT), added then read.
func BenchmarkPartsList(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var l partsList
		for i := range 1 << 20 {
			p := [7]time.Duration{5: time.Duration(i%9973) * 2311}
			if i%7 == 0 {
				p[2], p[3] = 103*time.Millisecond, 24*time.Millisecond
			}
			l.add(p[2]+p[3]+p[5], &p)
		}
		it := l.iter()
		for i := range 1 << 20 {
			_ = it.next(time.Duration(i))
		}
	}
}

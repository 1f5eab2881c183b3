// Package reservoir keeps a bounded uniform sample of durations: at most
// Cap of the values added (Vitter's algorithm R, with a fixed-seed
// xorshift, so a sample depends only on the order of the values), with
// their exact count and maximum. A server's lateness statistics (the wall
// clock's timer lateness in actors, the client-seen lateness and lag in
// serve) take constant memory however long it runs.
//
// Contract: a pure value type (the zero Sample is empty and ready), no
// locking (callers hold their own), deterministic.
package reservoir

import (
	"slices"
	"time"
)

// Cap bounds a Sample (512 KiB of durations).
const Cap = 1 << 16

// Sample is a uniform sample of at most Cap durations with the exact count
// and maximum of all those added.
type Sample struct {
	s    []time.Duration
	n    int
	max  time.Duration
	rand uint64
}

// Add adds d.
func (r *Sample) Add(d time.Duration) {
	r.n++
	r.max = max(r.max, d)
	if len(r.s) < Cap {
		r.s = append(r.s, d)
		return
	}
	if r.rand == 0 {
		r.rand = 0x9e3779b97f4a7c15
	}
	r.rand ^= r.rand << 13
	r.rand ^= r.rand >> 7
	r.rand ^= r.rand << 17
	if j := r.rand % uint64(r.n); j < Cap {
		r.s[j] = d
	}
}

// N is the count of durations added.
func (r *Sample) N() int { return r.n }

// Max is the largest duration added (0 when none).
func (r *Sample) Max() time.Duration { return r.max }

// Sorted returns a sorted copy of the sample: every value up to Cap
// added, a uniform sample of Cap of them beyond.
func (r *Sample) Sorted() []time.Duration {
	s := slices.Clone(r.s)
	slices.Sort(s)
	return s
}

// Quantiles returns the p-quantiles (nearest rank) of the sample, the
// exact maximum and the count of values added (zeros when none).
func (r *Sample) Quantiles(ps ...float64) (qs []time.Duration, maxV time.Duration, n int) {
	if r.n == 0 {
		return make([]time.Duration, len(ps)), 0, 0
	}
	s := r.Sorted()
	for _, p := range ps {
		qs = append(qs, s[min(len(s)-1, int(p*float64(len(s))))])
	}
	return qs, r.max, r.n
}

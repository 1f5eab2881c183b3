package serve

import (
	"sort"
	"time"
)

// reservoir keeps a uniform sample of at most reservoirCap of the
// durations added (Vitter's algorithm R, with a fixed-seed xorshift so a
// sample depends only on the order of the values), their count and exact
// maximum: a server's lateness statistics take constant memory however
// many requests it serves.
type reservoir struct {
	s    []time.Duration
	n    int
	max  time.Duration
	rand uint64
}

// reservoirCap bounds a reservoir (512 KiB of samples).
const reservoirCap = 1 << 16

func (r *reservoir) add(d time.Duration) {
	r.n++
	r.max = max(r.max, d)
	if len(r.s) < reservoirCap {
		r.s = append(r.s, d)
		return
	}
	if r.rand == 0 {
		r.rand = 0x9e3779b97f4a7c15
	}
	r.rand ^= r.rand << 13
	r.rand ^= r.rand >> 7
	r.rand ^= r.rand << 17
	if j := r.rand % uint64(r.n); j < reservoirCap {
		r.s[j] = d
	}
}

// quantiles returns the p-quantiles (nearest rank) of the sample, the
// exact maximum and the count of values added.
func (r *reservoir) quantiles(ps ...float64) (qs []time.Duration, maxV time.Duration, n int) {
	if r.n == 0 {
		return make([]time.Duration, len(ps)), 0, 0
	}
	s := append([]time.Duration(nil), r.s...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	for _, p := range ps {
		qs = append(qs, s[min(len(s)-1, int(p*float64(len(s))))])
	}
	return qs, r.max, r.n
}

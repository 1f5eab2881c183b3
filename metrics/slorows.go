package metrics

import "time"

// sloRows is what the SLO needs of each ended, not aborted request, in
// the order tallied, compact (about 5 to 7 bytes a row instead of a
// 40-byte struct in a doubling slice): a zig-zag varint of
// session<<2 | flags and one of the arrival's difference from the
// previous row's, in durs' fixed-size chunks. A completed row's TTFT,
// E2E and (sloTPOT) TPOT are the Tally's ttft, e2e and tpot lists, which
// hold the completed requests in the same order: nothing is stored twice.
type sloRows struct {
	d    durs
	n    int
	prev time.Duration // the last row's arrival
}

// Row flags.
const (
	sloFailed = 1 << iota
	sloTPOT   // TPOT defined (≥ 0): the row has an entry in Tally.tpot
)

func (s *sloRows) add(sess int32, failed, hasTPOT bool, arrival time.Duration) {
	f := int64(0)
	if failed {
		f |= sloFailed
	}
	if hasTPOT {
		f |= sloTPOT
	}
	s.d.add(time.Duration(int64(sess)<<2 | f))
	s.d.add(arrival - s.prev) // wraps for extreme values; next undoes it exactly
	s.prev = arrival
	s.n++
}

func (s *sloRows) len() int { return s.n }

// each calls f with every row in the order added, its durations read
// from ttft, e2e and tpot (the Tally's; -1 where a row has none).
func (s *sloRows) each(ttft, e2e, tpot *durs, f func(r sloRow)) {
	it, tt, te, tp := s.d.iter(), ttft.iter(), e2e.iter(), tpot.iter()
	var prev time.Duration
	for range s.n {
		k := int64(it.next())
		prev += it.next()
		r := sloRow{sess: int32(k >> 2), failed: k&sloFailed != 0, arrival: prev, ttft: -1, tpot: -1, e2e: -1}
		if !r.failed {
			r.ttft, r.e2e = tt.next(), te.next()
			if k&sloTPOT != 0 {
				r.tpot = tp.next()
			}
		}
		f(r)
	}
}

package cluster

import (
	"math"
	"slices"

	"github.com/pdemu/pdemu/policy"
)

// candRank is a candidate's place in the routing log's ranking (candLess)
// as two comparisons instead of up to four: its Score, then tie, the rest
// of its key (sticky, −inflight, −assigned) as one unsigned number that
// is larger for the higher-ranked candidate. At 64 workers keep ranks 48
// candidates per try, ~12 tries per request: the comparisons in its
// insertion were a tenth of a 16p48d run's instructions (callgrind).
type candRank struct {
	score float64
	tie   uint64
}

// less is candLess on ranks (TestRankIsCandLess).
func (a candRank) less(b candRank) bool {
	return a.score < b.score || (a.score == b.score && a.tie < b.tie)
}

// rank returns cands' ranks, in o.ranks (valid until the next call):
// candLess(&cands[i], &cands[j]) == r[i].less(r[j]) for every i, j. The
// tie packs sticky (bit 63), MaxInt32 − inflight (bits 32–62) and
// MaxUint32 − assigned (bits 0–31) while every count fits; beyond that
// (never in practice) it is the candidate's dense rank by tailLess.
func (o *routerObs) rank(cands []policy.Candidate) []candRank {
	r := slices.Grow(o.ranks[:0], len(cands))[:len(cands)]
	var over uint64 // nonzero: a count does not fit its bits (negative ones neither)
	for i := range cands {
		c := &cands[i]
		over |= uint64(c.Inflight)>>31 | uint64(c.Assigned)>>32
		tie := uint64(math.MaxInt32-c.Inflight)<<32 | uint64(math.MaxUint32-c.Assigned)&math.MaxUint32
		if c.Sticky {
			tie |= 1 << 63
		}
		r[i] = candRank{score: c.Score, tie: tie}
	}
	packed := over == 0
	if !packed {
		order := o.order[:0]
		for i := range cands {
			order = append(order, i)
		}
		slices.SortStableFunc(order, func(i, j int) int {
			switch {
			case tailLess(&cands[i], &cands[j]):
				return -1
			case tailLess(&cands[j], &cands[i]):
				return 1
			}
			return 0
		})
		var tie uint64
		for x, i := range order {
			if x > 0 && tailLess(&cands[order[x-1]], &cands[i]) {
				tie++
			}
			r[i].tie = tie
		}
		o.order = order
	}
	o.ranks = r
	return r
}

package cluster

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/policy"
)

// TestRankIsCandLess: for any candidates, their ranks compare as
// candLess compares them, pair by pair: small counts (the packed ties),
// and counts beyond what a tie packs (negative, past MaxInt32 or
// MaxUint32, past 2^53 where the keys' floats merge neighbours), which
// rank them by sorting.
func TestRankIsCandLess(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		big := rapid.Bool().Draw(rt, "big")
		n := rapid.IntRange(1, 12).Draw(rt, "n")
		cands := make([]policy.Candidate, n)
		for i := range cands {
			c := policy.Candidate{D: i, Score: float64(rapid.IntRange(0, 2).Draw(rt, "score")) + rapid.SampledFrom([]float64{0, 0.5, 1}).Draw(rt, "alpha"),
				Sticky: rapid.Bool().Draw(rt, "sticky"), Inflight: rapid.IntRange(0, 2).Draw(rt, "inflight"),
				Assigned: int64(rapid.IntRange(0, 2).Draw(rt, "assigned"))}
			if big {
				c.Inflight = rapid.SampledFrom([]int{-1, 0, 1, math.MaxInt32, math.MaxInt32 + 1, 1 << 53, 1<<53 + 1}).Draw(rt, "bigInflight")
				c.Assigned = rapid.SampledFrom([]int64{-1, 0, 1, math.MaxUint32, math.MaxUint32 + 1, 1 << 53, 1<<53 + 1}).Draw(rt, "bigAssigned")
			}
			cands[i] = c
		}
		o := &routerObs{}
		r := o.rank(cands)
		require.Len(rt, r, n)
		for i := range cands {
			for j := range cands {
				require.Equal(rt, candLess(&cands[i], &cands[j]), r[i].less(r[j]), "%+v < %+v", cands[i], cands[j])
			}
		}
	})
}

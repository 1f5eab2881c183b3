package cluster

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/workload"
)

// TestKeepTopK: a try lists every candidate up to k, else the k largest
// keys in index order, the chosen one always; the rest are counted.
func TestKeepTopK(t *testing.T) {
	cands := func(overlaps ...int) []policy.Candidate {
		out := make([]policy.Candidate, len(overlaps))
		for i, ov := range overlaps {
			out[i] = policy.Candidate{D: i, Overlap: ov, Score: float64(ov)}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		k       int
		cands   []policy.Candidate
		chosen  int
		want    []int
		omitted int
	}{
		{"at most k: all", 3, cands(1, 2, 3), 0, []int{0, 1, 2}, 0},
		{"unbounded", 0, cands(1, 2, 3, 4), 0, []int{0, 1, 2, 3}, 0},
		{"top k in index order", 2, cands(5, 1, 9, 3), 2, []int{0, 2}, 2},
		{"chosen outside the top replaces the k-th", 2, cands(5, 1, 9, 3), 1, []int{1, 2}, 2},
		{"tie: the lower index", 2, cands(4, 4, 4, 4), 0, []int{0, 1}, 2},
		{"k = 1 keeps only the chosen", 1, cands(7, 8, 9), 0, []int{0}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &routerObs{log: true, k: tc.k, decode: []string{"d0", "d1", "d2", "d3"}}
			tr := o.try(0, 0, tc.cands, tc.chosen, nil)
			var got []int
			for _, c := range tr.Candidates {
				got = append(got, slices.Index(o.decode, c.DWorker))
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.omitted, tr.Omitted)
			assert.Equal(t, o.decode[tc.chosen], tr.Chosen)
		})
	}
}

// TestKeepProperty: for any candidates, k and chosen worker, keep lists
// min(k, n) distinct indexes ascending, the chosen one among them, and no
// omitted candidate ranks above a kept one other than the chosen.
func TestKeepProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(rt, "n")
		k := rapid.IntRange(1, 10).Draw(rt, "k")
		cands := make([]policy.Candidate, n)
		for i := range cands {
			cands[i] = policy.Candidate{D: i, Score: float64(rapid.IntRange(0, 4).Draw(rt, "score")),
				Sticky: rapid.Bool().Draw(rt, "sticky"), Inflight: rapid.IntRange(0, 3).Draw(rt, "inflight"),
				Assigned: int64(rapid.IntRange(0, 3).Draw(rt, "assigned"))}
		}
		chosen := -1
		if n > 0 {
			chosen = rapid.IntRange(0, n-1).Draw(rt, "chosen")
		}
		o := &routerObs{k: k}
		keep := slices.Clone(o.keep(cands, chosen))
		require.Len(rt, keep, min(n, k))
		require.True(rt, slices.IsSorted(keep))
		require.Len(rt, slices.Compact(slices.Clone(keep)), len(keep), "distinct")
		if chosen >= 0 {
			require.Contains(rt, keep, chosen)
		}
		for j := range cands {
			if slices.Contains(keep, j) {
				continue
			}
			for _, i := range keep {
				if i == chosen {
					continue
				}
				ki, kj := cands[i].Key(), cands[j].Key()
				require.False(rt, keyLess(ki, kj), "omitted %d (%v) ranks above kept %d (%v)", j, kj, i, ki)
				if ki == kj {
					require.Less(rt, i, j, "a tie keeps the lower index")
				}
			}
		}
	})
}

// countingExplainer counts Explain calls.
type countingExplainer struct{ calls int }

func (e *countingExplainer) Explain(_ *policy.Dispatch, dst []policy.Candidate) []policy.Candidate {
	e.calls++
	return append(dst, policy.Candidate{D: 0})
}

// TestLogOff: with the decision log off the router neither explains nor
// keeps anything, and allocates nothing for it; on, it explains each try.
func TestLogOff(t *testing.T) {
	req := &workload.Request{ID: 1, SessionName: "s"}
	for _, log := range []bool{false, true} {
		ex := &countingExplainer{}
		n := &routerNode{pol: nil}
		n.Observe(metrics.NewRouterRecorder(), log, 8, "kvc", []string{"p0"}, []string{"d0"})
		n.obs.explain = ex
		o := n.obs
		ds := policy.NewDispatch(req)
		run := func() {
			c := o.begin(ds, true)
			o.step(time.Millisecond, ds, policy.Step{Action: policy.ActAdmit, D: 0}, c, false)
			o.reply(AdmitReply{&Admission{DS: ds, D: 0, Mode: policy.ModeDirect}})
			o.step(2*time.Millisecond, ds, policy.Step{Action: policy.ActPrefill, D: 0, Mode: policy.ModeDirect}, nil, false)
		}
		if !log {
			assert.Zero(t, testing.AllocsPerRun(100, run), "log off allocates nothing")
			assert.Zero(t, ex.calls, "log off explains nothing")
			assert.Zero(t, o.lines.Len())
			continue
		}
		run()
		assert.Equal(t, 1, ex.calls)
		line, ok := o.lines.Get(1)
		assert.True(t, ok)
		assert.JSONEq(t, `{"id":1,"session":"s","turn":0,"input_tokens":0,"policy":"kvc","tries":[{"try":0,"at_ms":1,
			"candidates":[{"d_worker":"d0","key":[0,0,0,0],"overlap":0,"rejects":0,"eligible":true}],"chosen":"d0",
			"reply":"admitted","reply_mode":"Direct","reply_reason":""}],"fallback":false,"fallback_reason":"","mode":"Direct",
			"p_worker":"p0","d_worker":"d0"}`, string(line))
	}
}

// TestCandLessIsKeyLess: keep's comparison on the candidates' fields is
// keyLess on their keys, ties, fractional scores (α) and large counts
// included.
func TestCandLessIsKeyLess(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		draw := func(s string) policy.Candidate {
			return policy.Candidate{Score: float64(rapid.IntRange(0, 3).Draw(rt, s+"score")) + rapid.SampledFrom([]float64{0, 0.5, 1}).Draw(rt, s+"alpha"),
				Sticky: rapid.Bool().Draw(rt, s+"sticky"), Inflight: rapid.IntRange(0, 2).Draw(rt, s+"inflight"),
				Assigned: rapid.SampledFrom([]int64{0, 1, 2, 1 << 53, 1<<53 + 1}).Draw(rt, s+"assigned")}
		}
		a, b := draw("a"), draw("b")
		require.Equal(rt, keyLess(a.Key(), b.Key()), candLess(&a, &b), "%+v < %+v", a, b)
		require.Equal(rt, keyLess(b.Key(), a.Key()), candLess(&b, &a), "%+v < %+v", b, a)
	})
}

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

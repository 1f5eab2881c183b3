package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Explain reports the state Route reads: over random histories, Route's
// choice is the eligible candidate with the largest key (lowest index on
// a full tie), or, when none is eligible, the untried one with the fewest
// rejects; Explain changes nothing.
func TestExplainMatchesRoute(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nd := rapid.IntRange(1, 6).Draw(rt, "decode")
		k, err := NewKVC(KVCConfig{Alpha: rapid.Float64Range(0, 4).Draw(rt, "alpha"), TauReject: rapid.IntRange(1, 3).Draw(rt, "tau"),
			Epsilon: rapid.IntRange(1, 4).Draw(rt, "eps"), Prefill: 1, Decode: nd})
		require.NoError(rt, err)
		for i := 0; i < 40; i++ {
			s := int32(rapid.IntRange(0, 3).Draw(rt, "session"))
			n := rapid.IntRange(0, 12).Draw(rt, "blocks")
			r := req(s, i, chainBlocks(s, n))
			ds := NewDispatch(r)
			for tries := 0; tries < 3; tries++ {
				cands := k.Explain(ds, nil)
				require.Len(rt, cands, nd)
				again := k.Explain(ds, nil)
				require.Equal(rt, cands, again, "Explain changes nothing")
				d := k.Route(ds)
				want := -1
				for _, c := range cands {
					if c.Eligible() && (want < 0 || keyLess(cands[want].Key(), c.Key())) {
						want = c.D
					}
				}
				if want < 0 { // degenerate branch
					for _, c := range cands {
						if !c.Tried && (want < 0 || c.Rejects < cands[want].Rejects) {
							want = c.D
						}
					}
				}
				require.Equal(rt, want, d, "route vs explained candidates %+v", cands)
				if d < 0 {
					break
				}
				if rapid.Bool().Draw(rt, "admit") {
					k.Admitted(ds, d, ModeSeed)
					if rapid.Bool().Draw(rt, "finish") {
						k.Finished(d)
					}
					break
				}
				k.Rejected(ds, d, "no-d-capacity")
			}
		}
	})
}

func keyLess(a, b [4]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func TestCandidateKey(t *testing.T) {
	c := Candidate{D: 1, Overlap: 5, Sticky: true, Score: 6.5, Inflight: 2, Assigned: 7}
	assert.Equal(t, [4]float64{6.5, 1, -2, -7}, c.Key())
	assert.True(t, c.Eligible())
	c.Blocked = true
	assert.False(t, c.Eligible())
}

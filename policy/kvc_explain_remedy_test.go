package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// refOverlap is line 6's overlap computed afresh from the index, as a
// reference for the router's cached one: every block looked up (Overlap),
// or with OwnOverlap the common prefix with the session's own record on
// every worker in mine, the workers it was admitted to (with blocks)
// since it was last forgotten, less those that evicted it (a forgotten
// session starts as a new one: its records left in the index are not its
// own any more).
func refOverlap(k *KVC, ds *Dispatch, mine map[int]bool) []int {
	ov := make([]int, k.cfg.Decode)
	if k.cfg.OwnOverlap {
		for d := range mine {
			ov[d] = k.index.OwnedPrefix(d, ds.Req.Session, ds.Req.Blocks)
		}
		return ov
	}
	k.index.Overlap(ds.Req.Blocks, ov)
	return ov
}

// refChoice is Route's choice as the explained candidates state it: the
// eligible candidate with the largest key (the lowest index on a full
// tie) or, when none is eligible but one is untried, the untried one with
// the fewest rejects.
func refChoice(cands []Candidate) int {
	want := -1
	for _, c := range cands {
		if c.Eligible() && (want < 0 || keyLess(cands[want].Key(), c.Key())) {
			want = c.D
		}
	}
	if want >= 0 {
		return want
	}
	for _, c := range cands {
		if !c.Tried && (want < 0 || c.Rejects < cands[want].Rejects) {
			want = c.D
		}
	}
	return want
}

// event changes the router's state at random (or not): an eviction
// notice, a forgotten session, another request admitted; mine is
// refOverlap's record of it.
func event(rt *rapid.T, k *KVC, mine map[int32]map[int]bool, nd, i int) {
	switch rapid.IntRange(0, 5).Draw(rt, "event") {
	case 0:
		d, s := rapid.IntRange(0, nd-1).Draw(rt, "evict-d"), int32(rapid.IntRange(0, 3).Draw(rt, "evict-s"))
		k.Evicted(d, s)
		delete(mine[s], d)
	case 1:
		s := int32(rapid.IntRange(0, 3).Draw(rt, "forget-s"))
		k.Forget(s)
		clear(mine[s])
	case 2:
		d, s := rapid.IntRange(0, nd-1).Draw(rt, "other-d"), int32(rapid.IntRange(0, 3).Draw(rt, "other-s"))
		blocks := sharedChain(int(s), rapid.IntRange(0, 4).Draw(rt, "other-sys"), rapid.IntRange(0, 12).Draw(rt, "other-blocks"))
		k.Admitted(NewDispatch(req(s, i, blocks)), d, ModeSeed)
		mine[s][d] = true
		if len(blocks) == 0 {
			delete(mine[s], d)
		}
	}
}

// TestExplainMatchesRouteRemedies is TestExplainMatchesRoute with the
// opt-in remedies (own_overlap, load_floor) drawn too, with evictions and
// forgotten sessions between requests, and with Explain called before
// and after Route in either order: Explain's overlaps are always the
// reference's (computed afresh from the index), and Route's choice is the
// one its candidates explain.
func TestExplainMatchesRouteRemedies(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nd := rapid.IntRange(1, 6).Draw(rt, "decode")
		k, err := NewKVC(KVCConfig{Alpha: rapid.Float64Range(0, 4).Draw(rt, "alpha"), TauReject: rapid.IntRange(1, 3).Draw(rt, "tau"),
			Epsilon: rapid.IntRange(1, 4).Draw(rt, "eps"), Prefill: 1, Decode: nd,
			OwnOverlap: rapid.Bool().Draw(rt, "own"), LoadFloor: rapid.IntRange(0, 2).Draw(rt, "floor")})
		require.NoError(rt, err)
		mine := map[int32]map[int]bool{} // refOverlap's
		for s := range int32(4) {
			mine[s] = map[int]bool{}
		}
		for i := 0; i < 40; i++ {
			event(rt, k, mine, nd, i)
			s := int32(rapid.IntRange(0, 3).Draw(rt, "session"))
			n := rapid.IntRange(0, 12).Draw(rt, "blocks")
			blocks := sharedChain(int(s), rapid.IntRange(0, 4).Draw(rt, "sys"), n)
			ds := NewDispatch(req(s, i, blocks))
			for tries := 0; tries < 3; tries++ {
				event(rt, k, mine, nd, i) // (an eviction notice while a reply is awaited, ...)
				before := rapid.Bool().Draw(rt, "explain-first")
				var cands []Candidate
				if before {
					cands = k.Explain(ds, nil)
					if rapid.Bool().Draw(rt, "change-between") { // not the router's order: the overlap is stale
						event(rt, k, mine, nd, i)
						cands = k.Explain(ds, nil)
					}
				}
				d := k.Route(ds)
				if !before {
					cands = k.Explain(ds, nil)
				}
				require.Len(rt, cands, nd)
				ov := refOverlap(k, ds, mine[s])
				for _, c := range cands {
					require.Equal(rt, ov[c.D], c.Overlap, "worker %d's overlap vs the reference", c.D)
				}
				require.Equal(rt, refChoice(cands), d, "route vs explained candidates %+v", cands)
				if d < 0 {
					break
				}
				if rapid.Bool().Draw(rt, "admit") {
					k.Admitted(ds, d, ModeSeed)
					mine[s][d] = len(blocks) > 0
					if len(blocks) == 0 {
						delete(mine[s], d)
					}
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

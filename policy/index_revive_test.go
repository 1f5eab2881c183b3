package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIndexRevivesOffPositions walks an off position through the states
// a compaction leaves it in and revives it each time: a hash born after
// one context and recorded again after another (the second position is
// off); the first dies and a compaction drops it, so the second is the
// hash's only position, off and canon (it keeps the entry); it dies and is
// revived on its context, which drops the entry; a third position after a
// third context is off against the entry recorded again. Whatever the
// path, an off position is never left without posDup or posCanon (the
// state birth's fast path does not look at), and every step matches the
// per-block reference.
func TestIndexRevivesOffPositions(t *testing.T) {
	const a, b, c, k = 11, 22, 44, 33
	x, v := NewResidentIndex(4), newIndexV1(4)
	do := func(set bool, d int, s int32, l ...uint64) {
		t.Helper()
		if set {
			x.Set(d, s, l)
			v.Set(d, s, l)
		} else {
			x.Remove(d, s)
			v.Remove(d, s)
		}
		require.NoError(t, checkSegs(x))
		require.Equal(t, v.Chained(), x.Chained(), "Chained")
		require.Equal(t, v.Blocks(), x.Blocks(), "Blocks")
		probe := []uint64{b, k}
		got, want := make([]int, 4), make([]int, 4)
		x.LongestPrefix(probe, got)
		v.LongestPrefix(probe, want)
		require.Equal(t, want, got, "LongestPrefix")
	}
	compact := func() {
		t.Helper()
		x.compact(x.compactLimit(x.live, 0))
		require.NoError(t, checkSegs(x))
	}
	do(true, 0, 0, a, k) // k born after a
	do(true, 1, 1, b, k) // k again, after b: off its canonical context
	do(false, 0, 0)      // the first k dies
	compact()            // and is dropped: the second is k's only position
	p := x.first(k)
	require.Equal(t, uint8(posOff|posCanon|posLive), x.flag[p], "k's only position: off, keeping its canon entry")
	require.False(t, x.Chained())
	do(false, 1, 1)
	do(true, 2, 2, b, k) // revived: on its context now, the entry dropped
	require.Equal(t, p, x.first(k), "revived in place")
	require.Equal(t, uint8(posLive), x.flag[p], "live, no other flag")
	require.True(t, x.Chained())
	do(true, 3, 3, c, k) // a third context: the entry is recorded again
	require.False(t, x.Chained())
	do(false, 2, 2) // the canonical k dies
	compact()
	q := x.first(k)
	require.Equal(t, uint8(posOff|posCanon|posLive), x.flag[q])
	do(false, 3, 3)
	do(true, 1, 4, c, k)
	require.Equal(t, q, x.first(k), "revived in place")
	require.Equal(t, uint8(posLive), x.flag[q], "live, no other flag")
	require.True(t, x.Chained())
}

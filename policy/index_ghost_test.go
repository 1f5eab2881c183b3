package policy

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIndexGhosts walks a removed record's ghost through what may happen
// to its positions before the session's next request: its blocks
// recorded again on another worker (the ghost's ranges are live again),
// and a compaction that moves everything, after which the old ranges
// hold another session's dead positions (a ghost kept across it would
// count nothing for blocks resident elsewhere). Every answer matches the
// per-block reference.
func TestIndexGhosts(t *testing.T) {
	withKeepDead(t, 0)
	a, b := chainBlocks(1, 40), chainBlocks(2, 40)
	x, v := NewResidentIndex(3), newIndexV1(3)
	setI := func(d int, s int32, l []uint64) {
		x.SetImmutable(d, s, l)
		v.SetImmutable(d, s, l)
	}
	remove := func(d int, s int32) {
		x.Remove(d, s)
		v.Remove(d, s)
	}
	check := func(blocks []uint64, d int, s int32, want []int) {
		t.Helper()
		require.NoError(t, checkSegs(x))
		got, ref := make([]int, 3), make([]int, 3)
		require.Equal(t, v.OverlapOwned(blocks, d, s, ref), x.OverlapOwned(blocks, d, s, got))
		require.Equal(t, ref, got, "against the reference")
		require.Equal(t, want, got)
	}
	setI(0, 0, a[:20])
	setI(1, 1, b[:20])
	remove(0, 0)
	require.Len(t, x.ghosts, 1)
	check(a[:30], 0, 0, []int{0, 0, 0}) // the ghost's dead ranges, then absent blocks

	setI(2, 0, a[:10]) // the session moved: part of the ghost is live again
	check(a[:30], 0, 0, []int{0, 0, 10})
	remove(2, 0)

	// Set again from the ghost (create's hint): shorter, then longer
	// than the ghost's list, and after a part of it was revived and
	// died again under another record.
	setI(0, 0, a[:15])
	check(a[:30], 0, 0, []int{15, 0, 0})
	remove(0, 0)
	setI(0, 0, a[:25])
	check(a[:30], 0, 0, []int{25, 0, 0})
	remove(0, 0)
	setI(1, 3, a[:5])
	remove(1, 3)
	setI(0, 0, a[:20])
	check(a[:30], 0, 0, []int{20, 0, 0})
	require.Equal(t, v.WorkerBlocks(0), x.WorkerBlocks(0))
	require.Equal(t, v.Blocks(), x.Blocks())
	remove(0, 0)

	// A ghost replaced again and again leaves garbage runs: the slab is
	// packed (ghostSlack 0), and the ghost still works.
	old := ghostSlack
	ghostSlack = 0
	defer func() { ghostSlack = old }()
	for i := range 4 {
		setI(0, 0, a[:12+i])
		remove(0, 0)
		require.LessOrEqual(t, len(x.ghostRuns), 2*x.ghostLive)
	}
	setI(2, 4, a[:3])
	check(a[:20], 0, 0, []int{0, 0, 3})
	remove(2, 4)
	// Ghosts whose lists hold more than 8 times the arena's positions
	// (one list shared by many sessions) are all forgotten.
	for s := int32(10); s < 10+int32(len(x.keys)); s++ {
		setI(1, s, a[:20])
	}
	for s := int32(10); s < 10+int32(len(x.keys)); s++ {
		remove(1, s)
		require.LessOrEqual(t, x.ghostBlocks, 8*len(x.keys))
		require.LessOrEqual(t, x.ghostLive, len(x.keys))
	}
	check(a[:20], 1, 10, []int{0, 0, 0})
	ghostSlack = old

	x.compact(x.compactLimit(x.live, 0)) // b moves to a's old positions
	require.Empty(t, x.ghosts, "a compaction forgets the ghosts")
	remove(1, 1) // and dies there
	setI(2, 2, a[:20])
	check(a[:20], 0, 0, []int{0, 0, 20})
	check(slices.Clone(a[:20]), 0, 0, []int{0, 0, 20}) // not the ghost's array
}

package policy

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestV1IndexOwnership(t *testing.T) {
	x := newIndexV1(130)
	require.Equal(t, 130, x.Workers())
	sys := chainBlocks(99, 3)
	a := append(slices.Clone(sys), chainBlocks(1, 4)[3:]...)
	b := append(slices.Clone(sys), chainBlocks(2, 5)[3:]...)
	x.Set(0, 1, a)
	x.Set(0, 2, b)
	x.Set(129, 2, b)
	x.Set(64, 3, sys)
	require.Equal(t, 3+1+2, x.Blocks())
	require.Equal(t, 3+1+2, x.WorkerBlocks(0))
	require.Equal(t, 5, x.WorkerBlocks(129))
	require.True(t, x.Has(64, sys[2]))
	require.False(t, x.Has(63, sys[2]))
	require.True(t, x.Chained())

	ov := make([]int, 130)
	x.Overlap(b, ov)
	require.Equal(t, 5, ov[0])
	require.Equal(t, 5, ov[129])
	require.Equal(t, 3, ov[64])

	// The system prompt stays on worker 0 until its last owner there goes.
	x.Remove(0, 1)
	require.True(t, x.Has(0, sys[0]))
	x.Remove(0, 2)
	require.False(t, x.Has(0, sys[0]))
	require.True(t, x.Has(129, sys[0]))
	require.True(t, x.Has(64, sys[0]))
	x.Remove(64, 3)
	// Back to a single holder: stored inline again, ext record recycled.
	j := x.find(sys[0])
	require.GreaterOrEqual(t, x.slots[j].holder, int32(0))
	require.Len(t, x.extFree, len(x.extBits)/x.words)
	x.Remove(129, 2)
	require.Zero(t, x.Blocks())
	for d := 0; d < 130; d++ {
		require.Zero(t, x.WorkerBlocks(d))
	}
	x.Remove(5, 5) // nothing recorded: no-op
}

func TestIndexSetKeepsCommonPrefix(t *testing.T) {
	x := NewResidentIndex(2)
	full := chainBlocks(0, 10)
	x.Set(1, 0, full[:4])
	x.Set(1, 0, full)
	require.Equal(t, full, x.Owned(1, 0))
	x.Set(1, 0, full[:6]) // shrink
	require.Equal(t, 6, x.Blocks())
	other := append(slices.Clone(full[:3]), 777, 778)
	x.Set(1, 0, other) // diverge
	require.Equal(t, other, x.Owned(1, 0))
	require.False(t, x.Has(1, full[3]))
	other[0] = 5 // the index kept its own copy
	require.True(t, x.Has(1, full[0]))
	x.Set(1, 0, nil)
	require.Nil(t, x.Owned(1, 0))
	require.Zero(t, x.Blocks())
	require.True(t, x.Chained())
}

// inverseGolden returns g⁻¹ mod 2⁶⁴, to build keys with chosen hashes.
func inverseGolden() uint64 {
	inv := uint64(v1golden)
	for i := 0; i < 6; i++ {
		inv *= 2 - v1golden*inv
	}
	return inv
}

// TestIndexCollisions builds a long probe cluster that wraps around the
// end of the table and saturates a filter bucket, then removes it in an
// order that exercises backward-shift deletion.
func TestV1IndexCollisions(t *testing.T) {
	inv := inverseGolden()
	require.Equal(t, uint64(1), inv*v1golden)
	x := newIndexV1(3)
	var keys []uint64
	for i := uint64(0); i < 400; i++ {
		keys = append(keys, (^uint64(0)-i)*inv) // hashes at the very top: home = last slot
	}
	for i := 0; i < 40; i++ {
		keys = append(keys, uint64(i)*inv) // home = slot 0
	}
	for i, k := range keys {
		x.Set(i%3, int32(i), []uint64{k})
	}
	require.Equal(t, len(keys), x.Blocks())
	for i, k := range keys {
		require.True(t, x.Has(i%3, k), "key %d", i)
	}
	require.Equal(t, uint8(255), x.filter[(keys[0]*v1golden)>>x.fshift], "saturated bucket")
	// Remove every other key, then check the rest, then remove the rest.
	for i := 0; i < len(keys); i += 2 {
		x.Remove(i%3, int32(i))
	}
	for i, k := range keys {
		require.Equal(t, i%2 == 1, x.Has(i%3, k), "key %d", i)
	}
	ov := make([]int, 3)
	x.Overlap(keys, ov)
	require.Equal(t, len(keys)/2, ov[0]+ov[1]+ov[2])
	for i := 1; i < len(keys); i += 2 {
		x.Remove(i%3, int32(i))
	}
	require.Zero(t, x.Blocks())
	for i, k := range keys {
		require.False(t, x.Has(i%3, k))
	}
	require.Equal(t, uint8(255), x.filter[(keys[0]*v1golden)>>x.fshift], "a saturated count sticks")
}

func TestIndexOffChainCounting(t *testing.T) {
	x := NewResidentIndex(2)
	x.Set(0, 0, []uint64{1, 2, 3})
	require.True(t, x.Chained())
	x.Set(1, 1, []uint64{2, 3}) // 2 at depth 0: off its chain
	require.False(t, x.Chained())
	x.Set(1, 1, []uint64{1, 2, 3, 1}) // 1 again at depth 3
	require.False(t, x.Chained())
	x.Set(1, 1, []uint64{1, 2, 3, 4})
	require.True(t, x.Chained())
	x.Set(1, 2, []uint64{9, 3}) // 3 after 9
	require.False(t, x.Chained())
	x.Remove(1, 2)
	require.True(t, x.Chained())
	// The first owner leaves; the canonical position stays with the block.
	x.Remove(0, 0)
	x.Set(0, 0, []uint64{1, 2, 3})
	require.True(t, x.Chained())
}

func TestV1IndexHelpers(t *testing.T) {
	x := newIndexV1(70)
	x.Set(3, 0, []uint64{10})
	x.Set(3, 1, []uint64{11})
	x.Set(5, 1, []uint64{11})
	x.Set(69, 2, []uint64{11})
	a, b := x.find(10), x.find(11)
	out := make([]int, 70)
	x.addDiff(a, b, 7, out) // {3} \ {3,5,69} = ∅
	require.Zero(t, out[3])
	x.addDiff(b, a, 7, out) // {3,5,69} \ {3}
	require.Equal(t, []int{0, 7, 7}, []int{out[3], out[5], out[69]})
	x.Set(4, 3, []uint64{12})
	x.addDiff(x.find(10), x.find(12), 2, out) // {3} \ {4}
	require.Equal(t, 2, out[3])
	require.False(t, x.same(a, b))
	require.True(t, x.same(b, b))

}

// TestSetForgetsCallerSlice: Set copies and does not remember the caller's
// slice (only SetImmutable does), so a caller may rewrite its buffer and
// route with it again.
func TestSetForgetsCallerSlice(t *testing.T) {
	old := chainMin
	chainMin = 1
	t.Cleanup(func() { chainMin = old })
	buf := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	x := NewResidentIndex(2)
	x.Set(0, 0, buf)
	buf[3] = 99
	if got := x.OwnedPrefix(0, 0, buf); got != 3 {
		t.Fatalf("OwnedPrefix after rewrite = %d, want 3", got)
	}
	out := make([]int, 2)
	x.OverlapOwned(buf, 0, 0, out)
	if out[0] != 9 || out[1] != 0 {
		t.Fatalf("OverlapOwned after rewrite = %v, want [9 0]", out)
	}
	// SetImmutable, then Set from the same array: the promise is gone.
	x.SetImmutable(1, 0, buf[:5])
	x.Set(1, 0, buf[:6])
	buf[2] = 98
	if got := x.OwnedPrefix(1, 0, buf); got != 2 {
		t.Fatalf("OwnedPrefix after Set over SetImmutable = %d, want 2", got)
	}
}

// TestSetImmutableSharedArray: records set from one append-only array
// answer for longer and shorter slices of it without comparing.
func TestSetImmutableSharedArray(t *testing.T) {
	full := make([]uint64, 100)
	for i := range full {
		full[i] = uint64(i + 1)
	}
	x := NewResidentIndex(1)
	x.SetImmutable(0, 0, full[:40:40])
	for _, n := range []int{0, 1, 39, 40, 41, 100} {
		if got, want := x.OwnedPrefix(0, 0, full[:n]), min(n, 40); got != want {
			t.Fatalf("OwnedPrefix(full[:%d]) = %d, want %d", n, got, want)
		}
	}
	if got := x.OwnedPrefix(0, 0, full[1:50]); got != 0 {
		t.Fatalf("OwnedPrefix(full[1:50]) = %d, want 0", got)
	}
	x.SetImmutable(0, 0, full[:70])
	if got := x.WorkerBlocks(0); got != 70 {
		t.Fatalf("WorkerBlocks = %d, want 70", got)
	}
	x.SetImmutable(0, 0, full[:10])
	if got := x.WorkerBlocks(0); got != 10 {
		t.Fatalf("WorkerBlocks after shrink = %d, want 10", got)
	}
	// The index keeps the caller's slice itself: it must never write into
	// it or hand it out for reuse.
	want := slices.Clone(full)
	other := []uint64{500, 501, 502, 503, 504, 505, 506, 507}
	x.Set(0, 0, other) // fits in full's capacity
	x.SetImmutable(0, 1, full[:20])
	x.Remove(0, 1)
	x.Set(0, 2, other[:3])
	x.Set(0, 3, []uint64{900, 901, 902, 903, 904, 905, 906, 907, 908, 909, 910, 911, 912, 913, 914, 915, 916, 917, 918, 919, 920})
	if !slices.Equal(full, want) {
		t.Fatalf("caller's immutable slice was written: %v", full)
	}
	if got := x.Owned(0, 0); !slices.Equal(got, other) {
		t.Fatalf("Owned after Set over SetImmutable = %v, want %v", got, other)
	}
}

// TestFlagWords: firstFlagged and setFlag, which read the position flags
// 8 at a time, against byte-at-a-time loops (the flags past the slice's
// end, within its capacity, must be neither read nor written).
func TestFlagWords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		all := rapid.SliceOfN(rapid.Uint8Range(0, 15), 0, 48).Draw(t, "flags")
		n := rapid.IntRange(0, len(all)).Draw(t, "len")
		flags := all[:n]
		f := uint8(rapid.SampledFrom([]int{posDup, posOff, posCanon, posLive, posDup | posCanon, posDup | posLive, posDup | posOff | posCanon}).Draw(t, "f"))
		want := len(flags)
		for i, g := range flags {
			if g&f != 0 {
				want = i
				break
			}
		}
		if got := firstFlagged(flags, f); got != want {
			t.Fatalf("firstFlagged(%v (cap %v), %d) = %d, want %d", flags, all, f, got, want)
		}
		on := rapid.Bool().Draw(t, "on")
		var had uint8
		wantSet := slices.Clone(all)
		for i := range flags {
			had |= flags[i]
			if on {
				wantSet[i] |= f
			} else {
				wantSet[i] &^= f
			}
		}
		if got := setFlag(flags, f, on); got != had || !slices.Equal(all, wantSet) {
			t.Fatalf("setFlag(%v, %d, %v) = %d, %v; want %d, %v", flags, f, on, got, all, had, wantSet)
		}
	})
}

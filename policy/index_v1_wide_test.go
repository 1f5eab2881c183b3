package policy

import (
	"cmp"
	"maps"
	"math/bits"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// Wide clusters: up to 300 workers and blocks shared by dozens of them, so
// ext records gain and lose holders across every word of the bitset and
// their owner counts move through several count-block classes.

// refCounts is, per block, the owner count of every worker holding it
// (occurrences in the worker's lists): the map-based reading of what
// ResidentIndex keeps in its slots and ext records.
func refCounts(r *refIndex) map[uint64]map[int]int32 {
	c := map[uint64]map[int]int32{}
	for k, list := range r.owned {
		for _, b := range list {
			if c[b] == nil {
				c[b] = map[int]int32{}
			}
			c[b][int(k.d)]++
		}
	}
	return c
}

// checkHolders compares every slot's holders and owner counts with ref and
// checks that the count arena is exactly the live records' blocks plus the
// free lists.
func checkHolders(t interface{ Fatalf(string, ...any) }, x *indexV1, ref *refIndex) {
	want := refCounts(ref)
	if x.Blocks() != len(want) {
		t.Fatalf("Blocks() = %d, want %d", x.Blocks(), len(want))
	}
	live := 0
	for i, tg := range x.tags[:len(x.slots)] {
		if tg == 0 {
			continue
		}
		s := &x.slots[i]
		w := want[s.key]
		if w == nil {
			t.Fatalf("block %d recorded, not in the reference", s.key)
		}
		if s.holder >= 0 {
			if len(w) != 1 || w[int(s.holder)] != s.cnt {
				t.Fatalf("block %d: single holder %d×%d, want %v", s.key, s.holder, s.cnt, w)
			}
			continue
		}
		live++
		e := int(^s.holder)
		c := x.extCnt[e]
		if int(s.cnt) != len(w) || len(w) < 2 || int(s.cnt) > 2<<c.class || c.class > 0 && int(s.cnt) <= 2<<c.class/4 {
			t.Fatalf("block %d: %d holders (class %d), want %v", s.key, s.cnt, c.class, w)
		}
		r := 0
		for wd, word := range x.extBits[e*x.words : (e+1)*x.words] {
			for ; word != 0; word &= word - 1 {
				d := wd<<6 + bits.TrailingZeros64(word)
				if got := x.cnts[int(c.off)+r]; got != w[d] {
					t.Fatalf("block %d worker %d: count %d, want %d (%v)", s.key, d, got, w[d], w)
				}
				if x.rank(e, d) != r {
					t.Fatalf("rank(%d, %d) = %d, want %d", e, d, x.rank(e, d), r)
				}
				r++
			}
		}
		if r != len(w) {
			t.Fatalf("block %d: %d bits set, want %v", s.key, r, w)
		}
	}
	if got := len(x.extBits)/x.words - len(x.extFree); got != live {
		t.Fatalf("%d ext records in use, %d blocks use one", got, live)
	}
	// Every count block is either a live record's or on a free list, once.
	owner := make([]int, len(x.cnts))
	mark := func(off int32, class int) {
		for i := int(off); i < int(off)+2<<class; i++ {
			owner[i]++
		}
	}
	free := map[int32]bool{}
	for class, f := range x.cntFree {
		for _, off := range f {
			mark(off, class)
			free[off] = true
		}
	}
	inFree := map[int32]bool{}
	for _, e := range x.extFree {
		inFree[int32(e)] = true
	}
	for e, c := range x.extCnt {
		if !inFree[int32(e)] {
			if free[c.off] {
				t.Fatalf("ext record %d's counts are on a free list", e)
			}
			mark(c.off, int(c.class))
		}
	}
	for i, o := range owner {
		if o != 1 {
			t.Fatalf("count arena element %d belongs to %d blocks", i, o)
		}
	}
}

func TestIndexWideMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 300).Draw(t, "workers")
		// Workers come from a window, so small windows pile many holders
		// on few words and wide ones spread them over all of them.
		lo := rapid.IntRange(0, n-1).Draw(t, "lo")
		hi := rapid.IntRange(lo, n-1).Draw(t, "hi")
		sessions := rapid.IntRange(1, 40).Draw(t, "sessions")
		sys := rapid.IntRange(0, 20).Draw(t, "sys")
		chains := make([][]uint64, sessions)
		for s := range chains {
			chains[s] = sharedChain(s, sys, 30)
		}
		list := func(s int) []uint64 {
			if rapid.IntRange(0, 5).Draw(t, "dup") == 0 { // duplicates and foreign hashes
				return rapid.SliceOfN(rapid.Uint64Range(1000, 1005), 0, 12).Draw(t, "alpha")
			}
			return chains[s][:rapid.IntRange(0, 30).Draw(t, "len")]
		}
		x, ref := newIndexV1(n), newRefIndex(n)
		ops := rapid.IntRange(0, 400).Draw(t, "ops")
		for op := 0; op < ops; op++ {
			d := rapid.IntRange(lo, hi).Draw(t, "d")
			s := rapid.IntRange(0, sessions-1).Draw(t, "s")
			if rapid.IntRange(0, 3).Draw(t, "remove") == 0 {
				x.Remove(d, int32(s))
				ref.Remove(d, int32(s))
			} else {
				l := list(s)
				x.Set(d, int32(s), l)
				ref.Set(d, int32(s), l)
			}
			if op%50 == 49 {
				checkHolders(t, x, ref)
			}
		}
		checkHolders(t, x, ref)

		res := ref.resident()
		for d := 0; d < n; d++ {
			if got, want := x.WorkerBlocks(d), len(res[d]); got != want {
				t.Fatalf("WorkerBlocks(%d) = %d, want %d", d, got, want)
			}
		}
		got := make([]int, n)
		for q := 0; q < 4; q++ {
			s := rapid.IntRange(0, sessions-1).Draw(t, "qs")
			blocks := slices.Clone(list(s))
			clear(got)
			x.Overlap(blocks, got)
			if want := ref.overlap(blocks); !slices.Equal(got, want) {
				t.Fatalf("Overlap(%v) = %v, want %v", blocks, got, want)
			}
			want := ref.longestPrefix(blocks)
			x.LongestPrefix(blocks, got)
			if !slices.Equal(got, want) {
				t.Fatalf("LongestPrefix(%v) = %v, want %v", blocks, got, want)
			}
			d := rapid.IntRange(lo, hi).Draw(t, "hint")
			x.LongestPrefixOwned(blocks, d, int32(s), got)
			if !slices.Equal(got, want) {
				t.Fatalf("LongestPrefixOwned(%v, %d) = %v, want %v", blocks, d, got, want)
			}
		}

		// Forget everything: every ext record and count block is free.
		keys := slices.SortedFunc(maps.Keys(ref.owned), func(a, b ownerKey) int {
			return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.s, b.s))
		})
		for _, k := range keys { // sorted: failures replay exactly
			x.Remove(int(k.d), k.s)
		}
		ref.owned = map[ownerKey][]uint64{}
		checkHolders(t, x, ref)
		if x.Blocks() != 0 || len(x.extFree) != len(x.extCnt) {
			t.Fatalf("after removing all: %d blocks, %d of %d ext records free", x.Blocks(), len(x.extFree), len(x.extCnt))
		}
	})
}

// TestIndexManyHolders grows one block's holders to 300 (count blocks of
// every class) and shrinks them back in a scattered order, checking the
// holders, counts and count arena after every step.
func TestIndexManyHolders(t *testing.T) {
	const n = 300
	x, ref := newIndexV1(n), newRefIndex(n)
	sys := chainBlocks(9, 3)
	set := func(d int, s int32, l []uint64) {
		x.Set(d, s, l)
		ref.Set(d, s, l)
		checkHolders(t, x, ref)
	}
	for d := 0; d < n; d++ {
		set(d, 1, sys)
		if d%2 == 0 {
			set(d, 2, sys[:2]) // owner count 2 for sys[:2]
		}
	}
	for i := 0; i < n; i++ {
		d := i * 7 % n // 7 and 300 are coprime: every worker once
		set(d, 1, nil)
		if d%2 == 0 {
			set(d, 2, nil)
		}
	}
	if x.Blocks() != 0 || len(x.extFree) != len(x.extCnt) {
		t.Fatalf("%d blocks left, %d of %d ext records free", x.Blocks(), len(x.extFree), len(x.extCnt))
	}
}

package policy

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The per-segment ResidentIndex against the per-block index it replaced
// (indexV1, index_v1_test.go): random operation sequences over every
// exported method, comparing every observable result after every
// operation — counts, Chained, records, membership, Overlap and
// LongestPrefix with and without hints and the hints' return values (the
// router counts chained routes from them) — and the segment structure's
// own invariants (checkSegs).

// diffWorld draws owner lists: sessions whose turns extend one
// append-only array (prefix chains, SetImmutable's shared-array reading),
// turns that drop a few tail blocks and go on with fresh ones (branches),
// a system prompt shared by every session, and — when adversarial — lists
// with duplicates, reused hashes at other depths and spliced chains.
type diffWorld struct {
	n           int
	sessions    int
	full        [][]uint64 // per session: its longest chain
	adversarial bool
	fresh       uint64
}

func drawDiffWorld(t *rapid.T) *diffWorld {
	w := &diffWorld{
		n:           rapid.SampledFrom([]int{1, 2, 3, 8, 64, 65, 130, 300}).Draw(t, "workers"),
		sessions:    rapid.IntRange(1, 8).Draw(t, "sessions"),
		adversarial: rapid.Bool().Draw(t, "adversarial"),
		fresh:       1 << 40,
	}
	sys := rapid.IntRange(0, 10).Draw(t, "sys")
	for s := 0; s < w.sessions; s++ {
		w.full = append(w.full, sharedChain(s, sys, 80))
	}
	return w
}

func (w *diffWorld) list(t *rapid.T, s int) []uint64 {
	kind := rapid.IntRange(0, 9).Draw(t, "kind")
	if !w.adversarial && kind >= 6 {
		kind = 0
	}
	full := w.full[s]
	switch kind {
	case 0, 1, 2: // a prefix of the session's chain (its array itself)
		return full[:rapid.IntRange(0, len(full)).Draw(t, "n")]
	case 3, 4: // a branch: a prefix, then fresh blocks
		cut := rapid.IntRange(0, len(full)).Draw(t, "cut")
		l := slices.Clone(full[:cut])
		for range rapid.IntRange(1, 12).Draw(t, "new") {
			w.fresh++
			l = append(l, w.fresh)
		}
		return l
	case 5: // another session's chain
		o := rapid.IntRange(0, w.sessions-1).Draw(t, "other")
		return w.full[o][:rapid.IntRange(0, 80).Draw(t, "on")]
	case 6: // small alphabet: duplicates, hashes at many depths
		return rapid.SliceOfN(rapid.Uint64Range(1000, 1012), 0, 20).Draw(t, "alpha")
	case 7: // a chain spliced onto ours
		o := rapid.IntRange(0, w.sessions-1).Draw(t, "other")
		i := rapid.IntRange(0, 40).Draw(t, "at")
		j := rapid.IntRange(0, 40).Draw(t, "len")
		return append(slices.Clone(full[:i]), w.full[o][40:40+j]...)
	case 8: // our chain without its first blocks (hashes at other depths)
		i := rapid.IntRange(1, 30).Draw(t, "skip")
		return full[i : i+rapid.IntRange(0, 40).Draw(t, "sn")]
	default: // our chain with one block replaced
		c := slices.Clone(full[:rapid.IntRange(1, len(full)).Draw(t, "rn")])
		c[rapid.IntRange(0, len(c)-1).Draw(t, "rat")] = rapid.Uint64Range(1000, 1012).Draw(t, "rv")
		return c
	}
}

// request is a list, possibly with a foreign tail, a fresh copy or the
// list itself.
func (w *diffWorld) request(t *rapid.T, s int) []uint64 {
	l := w.list(t, s)
	switch rapid.IntRange(0, 2).Draw(t, "reqKind") {
	case 0:
		return append(slices.Clone(l), rapid.SliceOfN(rapid.Uint64Range(1000, 1012), 0, 6).Draw(t, "tail")...)
	case 1:
		return slices.Clone(l)
	}
	return l
}

// compareIndexes checks every observable of x against v.
func compareIndexes(t *rapid.T, w *diffWorld, x *ResidentIndex, v *indexV1, probes [][]uint64) {
	if x.Workers() != v.Workers() || x.Blocks() != v.Blocks() || x.Chained() != v.Chained() {
		t.Fatalf("Workers/Blocks/Chained = %d/%d/%v, want %d/%d/%v", x.Workers(), x.Blocks(), x.Chained(), v.Workers(), v.Blocks(), v.Chained())
	}
	for d := 0; d < w.n; d++ {
		if x.WorkerBlocks(d) != v.WorkerBlocks(d) {
			t.Fatalf("WorkerBlocks(%d) = %d, want %d", d, x.WorkerBlocks(d), v.WorkerBlocks(d))
		}
	}
	for k, r := range v.owned {
		got := x.Owned(int(k.d), k.s)
		if !slices.Equal(got, r.blocks) || (got == nil) != (r.blocks == nil) {
			t.Fatalf("Owned(%d, %d) = %v, want %v", k.d, k.s, got, r.blocks)
		}
	}
	if len(x.owned) != len(v.owned) {
		t.Fatalf("%d records, want %d", len(x.owned), len(v.owned))
	}
	gx, gv := make([]int, w.n), make([]int, w.n)
	for _, blocks := range probes {
		for _, b := range blocks {
			for d := range min(w.n, 3) {
				if x.Has(d, b) != v.Has(d, b) {
					t.Fatalf("Has(%d, %d) = %v", d, b, x.Has(d, b))
				}
			}
		}
		clear(gx)
		clear(gv)
		x.Overlap(blocks, gx)
		v.Overlap(blocks, gv)
		if !slices.Equal(gx, gv) {
			t.Fatalf("Overlap(%v) = %v, want %v", blocks, gx, gv)
		}
		x.LongestPrefix(blocks, gx)
		v.LongestPrefix(blocks, gv)
		if !slices.Equal(gx, gv) {
			t.Fatalf("LongestPrefix(%v) = %v, want %v", blocks, gx, gv)
		}
		for s := 0; s < w.sessions; s++ {
			for _, d := range []int{-1, 0, s % w.n, w.n - 1} {
				clear(gx)
				clear(gv)
				cx, cv := x.OverlapOwned(blocks, d, int32(s), gx), v.OverlapOwned(blocks, d, int32(s), gv)
				if cx != cv || !slices.Equal(gx, gv) {
					t.Fatalf("OverlapOwned(%v, %d, %d) = %d %v, want %d %v", blocks, d, s, cx, gx, cv, gv)
				}
				for i := range gx {
					gx[i], gv[i] = -7, -7
				}
				cx, cv = x.LongestPrefixOwned(blocks, d, int32(s), gx), v.LongestPrefixOwned(blocks, d, int32(s), gv)
				if cx != cv || !slices.Equal(gx, gv) {
					t.Fatalf("LongestPrefixOwned(%v, %d, %d) = %d %v, want %d %v", blocks, d, s, cx, gx, cv, gv)
				}
				if d >= 0 && x.OwnedPrefix(d, int32(s), blocks) != v.OwnedPrefix(d, int32(s), blocks) {
					t.Fatalf("OwnedPrefix(%d, %d, %v) = %d, want %d", d, s, blocks, x.OwnedPrefix(d, int32(s), blocks), v.OwnedPrefix(d, int32(s), blocks))
				}
			}
		}
	}
	if err := checkSegs(x); err != nil {
		t.Fatal(err)
	}
}

func TestIndexMatchesV1(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		withChainMin(t, rapid.SampledFrom([]int{1, 2, 8}).Draw(t, "chainMin"))
		withKeepDead(t, rapid.SampledFrom([]int{0, 8, 1 << 18}).Draw(t, "keepDead"))
		oldSlack := ghostSlack
		ghostSlack = rapid.SampledFrom([]int{0, 4, 1024}).Draw(t, "ghostSlack")
		defer func() { ghostSlack = oldSlack }()
		w := drawDiffWorld(t)
		x, v := NewResidentIndex(w.n), newIndexV1(w.n)
		if rapid.Bool().Draw(t, "bounded") { // pdemu serve's index
			x.Bound()
			old := boundedDead
			boundedDead = rapid.SampledFrom([]int{0, 8, 1 << 12}).Draw(t, "boundedDead")
			defer func() { boundedDead = old }()
		}
		ops := rapid.IntRange(1, 60).Draw(t, "ops")
		for op := 0; op < ops; op++ {
			d := rapid.IntRange(0, min(w.n, 6)-1).Draw(t, "d")
			if rapid.Bool().Draw(t, "far") {
				d = rapid.IntRange(0, w.n-1).Draw(t, "dfar")
			}
			s := rapid.IntRange(0, w.sessions-1).Draw(t, "s")
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0:
				x.Remove(d, int32(s))
				v.Remove(d, int32(s))
			case 1, 2:
				l := w.list(t, s)
				x.Set(d, int32(s), l)
				v.Set(d, int32(s), l)
			default:
				l := w.list(t, s)
				x.SetImmutable(d, int32(s), l)
				v.SetImmutable(d, int32(s), l)
			}
			probes := [][]uint64{w.request(t, rapid.IntRange(0, w.sessions-1).Draw(t, "qs"))}
			compareIndexes(t, w, x, v, probes)
		}
		// Forget everything, in a drawn order.
		keys := make([]ownerKey, 0, len(v.owned))
		for k := range v.owned {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b ownerKey) int { return int(a.d-b.d)*1<<20 + int(a.s-b.s) })
		keys = rapid.Permutation(keys).Draw(t, "order")
		for _, k := range keys {
			x.Remove(int(k.d), k.s)
			v.Remove(int(k.d), k.s)
		}
		compareIndexes(t, w, x, v, nil)
		if x.Blocks() != 0 || x.live != 0 || x.bad != 0 {
			t.Fatalf("after removing all: %d blocks, %d live positions, bad %d", x.Blocks(), x.live, x.bad)
		}
	})
}

func withKeepDead(t interface{ Cleanup(func()) }, v int) {
	old := keepDead
	keepDead = v
	t.Cleanup(func() { keepDead = old })
}

// checkSegs checks the segment structure against itself: positions and
// their segments, the dup and off counts, holder counts against the
// records' paths, and the derived totals.
func checkSegs(x *ResidentIndex) error {
	for p, f := range x.flag {
		// An off position is one of a hash's several positions, or its
		// only one after a compaction with the canon entry kept (birth's
		// fast path relies on it: it clears posOff alone).
		if f&posOff != 0 && f&(posDup|posCanon) == 0 {
			return fmt.Errorf("position %d is off but neither dup nor canon", p)
		}
	}
	for p, f := range x.flag {
		// posLive is exactly "its segment's range covers it".
		s := &x.segs[x.pseg[p]]
		if covered := int32(p) >= s.lo && int32(p) < s.hi; covered != (f&posLive != 0) {
			return fmt.Errorf("position %d: posLive %t, covered by its segment %t", p, f&posLive != 0, covered)
		}
	}
	live := 0
	occ := map[int32]map[int32]int32{} // segment → worker → lists through it
	for id := 1; id < len(x.segs); id++ {
		s := &x.segs[id]
		if s.lo == s.hi {
			continue
		}
		live += int(s.hi - s.lo)
		var dups, offs int32
		for p := s.lo; p < s.hi; p++ {
			if x.pseg[p] != int32(id) {
				return fmt.Errorf("position %d in segment %d is labelled %d", p, id, x.pseg[p])
			}
			if x.flag[p]&posDup != 0 {
				dups++
			}
			if x.flag[p]&posOff != 0 {
				offs++
			}
			if x.first(x.keys[p]) < 0 {
				return fmt.Errorf("position %d (hash %d) has no table entry", p, x.keys[p])
			}
		}
		if dups != s.dupc || offs != s.offc {
			return fmt.Errorf("segment %d: dupc/offc %d/%d, counted %d/%d", id, s.dupc, s.offc, dups, offs)
		}
		if s.parent >= 0 && (!x.valid(s.parent) || x.segs[x.pseg[s.parent]].hi-1 != s.parent) {
			return fmt.Errorf("segment %d: parent %d is not a live segment's end", id, s.parent)
		}
		if s.parent >= 0 && x.ctx(s.parent).depth+1 != s.depth || s.parent < 0 && s.depth != 0 {
			return fmt.Errorf("segment %d: depth %d after parent %d", id, s.depth, s.parent)
		}
		occ[int32(id)] = map[int32]int32{}
	}
	dupLive := 0
	for id := 1; id < len(x.segs); id++ {
		dupLive += int(x.segs[id].dupc)
	}
	if dupLive != x.dupLive {
		return fmt.Errorf("dupLive %d, segments hold %d", x.dupLive, dupLive)
	}
	if live != x.live {
		return fmt.Errorf("live %d, segments hold %d", x.live, live)
	}
	for k, r := range x.owned {
		depth := int32(len(r.blocks))
		for p := r.tail - 1; p >= 0; {
			id := x.pseg[p]
			s := &x.segs[id]
			if !x.valid(p) || s.hi-1 != p || s.depth+s.hi-s.lo != depth {
				return fmt.Errorf("record %v: path position %d (depth %d) is not a segment end", k, p, depth)
			}
			for i := s.lo; i < s.hi; i++ {
				if x.keys[i] != r.blocks[s.depth+i-s.lo] {
					return fmt.Errorf("record %v: node %d holds %d, the list %d", k, i, x.keys[i], r.blocks[s.depth+i-s.lo])
				}
			}
			occ[id][k.d]++
			depth = s.depth
			p = s.parent
		}
		if depth != 0 {
			return fmt.Errorf("record %v: path ends at depth %d", k, depth)
		}
	}
	for id, want := range occ {
		s := &x.segs[id]
		got := map[int32]int32{}
		total := int32(0)
		if s.hd >= 0 {
			got[s.hd] = s.hn
		} else {
			if len(x.hsets[^s.hd]) < 2 {
				return fmt.Errorf("segment %d: a holder list of %d", id, len(x.hsets[^s.hd]))
			}
			for _, h := range x.hsets[^s.hd] {
				got[h.d] = h.n
			}
		}
		for _, n := range got {
			total += n
		}
		if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) || total != s.occ {
			return fmt.Errorf("segment %d: holders %v (occ %d), the records say %v", id, got, s.occ, want)
		}
	}
	return nil
}

// TestIndexCompaction records and removes sessions until the arena has
// been compacted many times, checking the structure and the answers.
func TestIndexCompaction(t *testing.T) {
	withKeepDead(t, 0)
	x, v := NewResidentIndex(4), newIndexV1(4)
	chains := make([][]uint64, 20)
	for s := range chains {
		chains[s] = sharedChain(s, 5, 200)
	}
	out, want := make([]int, 4), make([]int, 4)
	for i := 0; i < 6000; i++ {
		s := i * 7 % len(chains)
		d := i % 4
		switch i % 5 {
		case 0, 3:
			x.Remove(d, int32(s))
			v.Remove(d, int32(s))
		default:
			l := chains[s][:(i*13)%200]
			if i%3 == 0 { // a fresh tail: dead positions pile up
				l = slices.Clone(l)
				for j := range 30 {
					l = append(l, uint64(1<<32+i*64+j))
				}
			}
			x.SetImmutable(d, int32(s), l)
			v.SetImmutable(d, int32(s), l)
		}
		if i%97 == 0 {
			if err := checkSegs(x); err != nil {
				t.Fatal(err)
			}
		}
		clear(out)
		clear(want)
		x.Overlap(chains[(s+1)%len(chains)], out)
		v.Overlap(chains[(s+1)%len(chains)], want)
		if !slices.Equal(out, want) || x.Blocks() != v.Blocks() {
			t.Fatalf("op %d: Overlap %v, want %v; Blocks %d, want %d", i, out, want, x.Blocks(), v.Blocks())
		}
	}
	if x.compactions < 8 {
		t.Fatalf("%d compactions", x.compactions)
	}
	t.Logf("%d compactions", x.compactions)
	if x.limit > 4*x.live+1000 {
		t.Fatalf("arena limit %d for %d live positions", x.limit, x.live)
	}
}

// sessionStream drives x with a stream of sessions like the 1M-request
// 1P3D run's: conc sessions at a time on 3 workers, each of turns turns
// that append 30 fresh blocks behind a 20-block shared prefix, a session
// removed when it ends, and every 5th turn's session moved to the next
// worker (removed from its own, recorded there: its chain is revived).
// With v non-nil it checks x against v every check turns.
func sessionStream(t testing.TB, x *ResidentIndex, v *indexV1, sessions, conc, turns, check int) {
	lists := make([][]uint64, conc)
	ids := make([]int32, conc)
	pin := make([]int, conc)
	next := uint64(1 << 40)
	out, want := make([]int, 3), make([]int, 3)
	remove := func(d int, s int32) {
		x.Remove(d, s)
		if v != nil {
			v.Remove(d, s)
		}
	}
	for n, started := 0, 0; started < sessions; {
		for c := range lists {
			if len(lists[c]) == 0 || len(lists[c]) >= 20+30*turns {
				if len(lists[c]) > 0 {
					remove(pin[c], ids[c])
				}
				lists[c] = sharedChain(0, 20, 20)
				ids[c], pin[c] = int32(started), started%3
				started++
			}
			for range 30 {
				lists[c] = append(lists[c], next)
				next++
			}
			l := lists[c]
			if n%5 == 4 {
				remove(pin[c], ids[c])
				pin[c] = (pin[c] + 1) % 3
			}
			clear(out)
			x.OverlapOwned(l, pin[c], ids[c], out)
			x.SetImmutable(pin[c], ids[c], l)
			if v != nil {
				v.SetImmutable(pin[c], ids[c], l)
			}
			if v != nil && n%check == 0 {
				clear(out)
				clear(want)
				x.Overlap(l, out)
				v.Overlap(l, want)
				if !slices.Equal(out, want) || x.Blocks() != v.Blocks() {
					t.Fatalf("turn %d: Overlap %v, want %v; Blocks %d, want %d", n, out, want, x.Blocks(), v.Blocks())
				}
				if err := checkSegs(x); err != nil {
					t.Fatal(err)
				}
			}
			n++
		}
	}
}

// TestIndexCompactsAtOneSize: in a steady stream of sessions (live
// positions about constant, dead ones piling up) the arena compacts at
// the size its dead allowance asks for and reuses its table: after the
// first compactions a table is allocated at most once per 8 compactions
// (when the live positions move across a power of two). Compacting to
// twice the live positions, as before, grew the arena back step by step
// after every compaction, allocating a table at each doubling.
func TestIndexCompactsAtOneSize(t *testing.T) {
	for _, kd := range []int{64, 1 << 12} {
		for _, bounded := range []bool{false, true} {
			withKeepDead(t, kd)
			x, v := NewResidentIndex(3), newIndexV1(3)
			if bounded {
				x.Bound()
			}
			sessionStream(t, x, v, 40, 4, 12, 37)
			c0, a0 := x.compactions, x.tableAllocs
			sessionStream(t, x, v, 400, 4, 12, 101)
			c := x.compactions - c0
			assert.Greater(t, c, 8, "keepDead %d bounded %v: compactions", kd, bounded)
			// The table may shrink and grow back now and then.
			assert.LessOrEqual(t, x.tableAllocs-a0, c/8, "keepDead %d bounded %v: tables allocated in %d compactions", kd, bounded, c)
		}
	}
}

// TestIndexCompactsInPlace: a compaction moves the live positions down
// within the arena it has (no second arena is allocated or kept: a spare
// as large as the live one, kept for the next compaction, was 8 MB of the
// 1M-request 1P3D run's peak live heap), reallocates
// only for a larger limit or, for a Bound index, one less than half its
// capacity, and the answers stay the reference's.
func TestIndexCompactsInPlace(t *testing.T) {
	for _, bounded := range []bool{false, true} {
		withKeepDead(t, 64)
		x, v := NewResidentIndex(3), newIndexV1(3)
		if bounded {
			x.Bound()
		}
		sessionStream(t, x, v, 40, 4, 12, 37)
		c0 := x.compactions
		for range 20 {
			keys, pseg, flag := unsafe.SliceData(x.keys), unsafe.SliceData(x.pseg), unsafe.SliceData(x.flag)
			limit := min(cap(x.keys), x.limit)
			require.GreaterOrEqual(t, limit, x.live)
			x.compact(limit)
			require.NoError(t, checkSegs(x))
			assert.Equal(t, x.live, len(x.keys), "bounded %v: a compaction keeps only live positions", bounded)
			assert.Same(t, keys, unsafe.SliceData(x.keys), "bounded %v: keys moved to another arena", bounded)
			assert.Same(t, pseg, unsafe.SliceData(x.pseg), "bounded %v: pseg moved to another arena", bounded)
			assert.Same(t, flag, unsafe.SliceData(x.flag), "bounded %v: flag moved to another arena", bounded)
			sessionStream(t, x, v, 8, 4, 12, 7)
		}
		assert.GreaterOrEqual(t, x.compactions-c0, 20)
		// A much smaller limit: a Bound index gives the arena back.
		x.compact(x.live + 1)
		require.NoError(t, checkSegs(x))
		if bounded {
			assert.LessOrEqual(t, cap(x.keys), 2*(x.live+1), "a Bound index keeps an arena twice its limit")
		}
		sessionStream(t, x, v, 40, 4, 12, 11)
	}
}

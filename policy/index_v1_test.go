package policy

// This file keeps the per-block resident index that indexV1 (index.go)
// replaced, as it was, under the name indexV1: the reference the per-segment
// index is tested against (index_diff_test.go), with its own tests
// (index_v1_internal_test.go).

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// indexV1 is the router's estimate of which prefix blocks are resident
// on which decode worker: an inverted index block hash → set of workers,
// with per-(worker, session) ownership so that evicting a session removes
// exactly the blocks it contributed (blocks shared by several sessions on
// one worker, such as a system prompt, stay until the last owner goes).
//
// Layout (built for the router hot path, see Overlap and KVC.Route):
//   - an open-addressing hash table (linear probing, backward-shift
//     deletion) whose 1-byte tags live in their own array, so a lookup that
//     misses usually touches one cache line of a small array;
//   - a block held by one worker stores that worker and its owner count in
//     its v1slot; a block held by several workers moves to an "ext" record with
//     a bitset of its holders (⌈n/64⌉ words) and one owner count per holder,
//     stored in bitset order (holder d's count is at the rank of bit d), so
//     a shared block costs O(n/64 + holders) bytes, not O(n) (see v1extCounts);
//   - every block remembers the position (depth) and predecessor (parent)
//     it had in the owner list that created it, and the index counts owner
//     occurrences that disagree. While that count is zero the index is a
//     forest of prefix chains: a block's predecessors are resident wherever
//     the block is, which lets Route count a verified chain with O(log n)
//     lookups (see chainOverlap). Any disagreement (duplicates, blocks that
//     are not prefix-chained, reused hashes) disables the shortcut, never
//     the result.
//
// Writes (Set, SetImmutable, Remove) need exclusive access; the read
// methods other than LongestPrefix and LongestPrefixOwned (which use a
// scratch vector) may run concurrently with each other, which
// KVC.RouteShared (and bench.SyncKVC) rely on.
type indexV1 struct {
	n     int // workers
	words int // bitset words per ext record

	tags  []uint8 // 0: empty v1slot
	slots []v1slot
	shift uint // 64 - log2(len(slots))
	// filter counts the blocks whose hash falls in each of its buckets
	// (4 per v1slot; a count that reaches 255 sticks): a zero count proves a
	// block absent with one byte load, which is what a cold request's
	// lookups mostly are.
	filter []uint8
	fshift uint
	mask   int
	used   int // occupied slots

	extBits []uint64      // words per ext record
	extCnt  []v1extCounts // per ext record: where its owner counts live in cnts
	extFree []int32

	// cnts holds the ext records' owner counts in blocks of 2<<class
	// int32s; cntFree[class] lists the free blocks of that class.
	cnts    []int32
	cntFree [][]int32

	records         // owner lists
	perWorker []int // distinct blocks per worker
	bad       int   // occurrences off their block's canonical (parent, depth)

	alive []uint64 // LongestPrefix scratch
}

// v1extCounts locates an ext record's owner counts: cnts[off : off+2<<class],
// of which the first (holders) are in use, holder d's at rank(e, d).
type v1extCounts struct {
	off   int32
	class int32
}

type v1slot struct {
	key    uint64
	parent uint64 // canonical predecessor (meaningful when depth > 0)
	depth  int32  // canonical position in an owner list
	bad    int32  // occurrences that disagree with (parent, depth)
	holder int32  // >= 0: the only worker holding the block; < 0: ^ext record
	cnt    int32  // single holder: its owner count; ext: number of holder workers
}

const (
	v1golden        = 0x9E3779B97F4A7C15
	v1minShift      = 64 - 4 // 16 slots
	v1filterBits    = 2
	v1filterPerSlot = 1 << v1filterBits
)

// newIndexV1 returns an empty index over n workers.
func newIndexV1(n int) *indexV1 {
	x := &indexV1{
		n: n, words: (n + 63) / 64,
		records:   records{owned: make(map[ownerKey]record)},
		perWorker: make([]int, n),
	}
	x.alloc(v1minShift)
	return x
}

func (x *indexV1) alloc(shift uint) {
	size := 1 << (64 - shift)
	x.tags = make([]uint8, size+8)
	x.slots = make([]v1slot, size)
	x.filter = make([]uint8, size*v1filterPerSlot)
	x.shift, x.mask, x.used = shift, size-1, 0
	x.fshift = shift - v1filterBits
}

// Workers is the number of workers the index covers.
func (x *indexV1) Workers() int { return x.n }

// Blocks is the number of distinct blocks resident somewhere.
func (x *indexV1) Blocks() int { return x.used }

// WorkerBlocks is the number of distinct blocks recorded on worker d.
func (x *indexV1) WorkerBlocks(d int) int { return x.perWorker[d] }

// Set records blocks as session s's resident blocks on worker d, replacing
// whatever was recorded for (d, s). Blocks kept from the previous record are
// not touched, so a growing prefix costs only its new blocks. The index
// keeps its own copy: callers may reuse their slices.
func (x *indexV1) Set(d int, s int32, blocks []uint64) { x.set(d, s, blocks, nil) }

// SetImmutable is Set for a caller that promises never to change the
// elements of blocks (as workload.Request.Blocks, immutable once emitted).
// The index keeps blocks itself instead of a copy (the record keeps the
// caller's array alive), and so knows where it starts: a later
// SetImmutable, OverlapOwned or OwnedPrefix for the same (d, s) with a
// slice starting at the same element — the next turn of a session whose
// requests share one append-only backing array — knows the common prefix
// (the shorter length) without comparing the blocks. Breaking the promise
// makes the index's answers wrong.
func (x *indexV1) SetImmutable(d int, s int32, blocks []uint64) {
	x.set(d, s, blocks, unsafe.SliceData(blocks))
}

func (x *indexV1) set(d int, s int32, blocks []uint64, src *uint64) {
	k := ownerKey{int32(d), s}
	rec := x.owned[k]
	old := rec.blocks
	common := rec.sharedPrefix(blocks)
	for i := common; i < len(old); i++ {
		x.unref(d, old, i)
	}
	for i := common; i < len(blocks); i++ {
		x.ref(d, blocks, i)
	}
	x.put(k, rec, blocks, src, common, 0)
}

// Remove forgets session s's blocks on worker d.
func (x *indexV1) Remove(d int, s int32) {
	k := ownerKey{int32(d), s}
	rec := x.owned[k]
	old := rec.blocks
	for i := range old {
		x.unref(d, old, i)
	}
	x.drop(k, rec)
}

// Has reports whether block b is recorded resident on worker d.
func (x *indexV1) Has(d int, b uint64) bool {
	i := x.find(b)
	return i >= 0 && x.holds(i, d)
}

func (x *indexV1) holds(i, d int) bool {
	h := x.slots[i].holder
	if h >= 0 {
		return int(h) == d
	}
	return x.extBits[int(^h)*x.words+d>>6]&(1<<(uint(d)&63)) != 0
}

// v1offChain reports whether occurrence list[i] disagrees with v1slot s's
// canonical position.
func v1offChain(s *v1slot, list []uint64, i int) bool {
	return int(s.depth) != i || (i > 0 && s.parent != list[i-1])
}

func (x *indexV1) ref(d int, list []uint64, i int) {
	b := list[i]
	j := x.find(b)
	if j < 0 {
		j = x.insert(b)
		s := &x.slots[j]
		s.depth, s.holder, s.cnt = int32(i), int32(d), 1
		if i > 0 {
			s.parent = list[i-1]
		}
		x.perWorker[d]++
		return
	}
	s := &x.slots[j]
	if v1offChain(s, list, i) {
		s.bad++
		x.bad++
	}
	if s.holder == int32(d) {
		s.cnt++
		return
	}
	if s.holder >= 0 {
		e := x.newExt()
		h := int(s.holder)
		x.extBits[e*x.words+h>>6] |= 1 << (uint(h) & 63)
		x.cnts[x.extCnt[e].off] = s.cnt
		s.holder, s.cnt = ^int32(e), 1
	}
	e := int(^s.holder)
	r := x.rank(e, d)
	if x.holds(j, d) {
		x.cnts[int(x.extCnt[e].off)+r]++
		return
	}
	// A new holder: open a count at its rank.
	c := x.extCnt[e]
	held := int(s.cnt)
	if held == 2<<c.class {
		c = x.moveCounts(e, held, c.class+1)
	}
	cs := x.cnts[c.off : int(c.off)+held+1]
	copy(cs[r+1:], cs[r:held])
	cs[r] = 1
	x.extBits[e*x.words+d>>6] |= 1 << (uint(d) & 63)
	s.cnt++
	x.perWorker[d]++
}

// rank is the number of holders of ext record e below worker d: the index
// of d's owner count.
func (x *indexV1) rank(e, d int) int {
	w := x.extBits[e*x.words : e*x.words+d>>6+1]
	last := len(w) - 1
	r := bits.OnesCount64(w[last] & (1<<(uint(d)&63) - 1))
	for _, word := range w[:last] {
		r += bits.OnesCount64(word)
	}
	return r
}

// moveCounts moves ext record e's held owner counts to a block of the
// class and returns its new location. A record grows to the next class
// when its block is full and shrinks to the previous one when a quarter
// full, so it keeps at most 4× its holders and moves O(1) counts per
// holder change, amortised.
func (x *indexV1) moveCounts(e, held int, class int32) v1extCounts {
	old := x.extCnt[e]
	c := v1extCounts{off: x.cntAlloc(int(class)), class: class}
	copy(x.cnts[c.off:int(c.off)+held], x.cnts[old.off:int(old.off)+held])
	x.cntRelease(old)
	x.extCnt[e] = c
	return c
}

// cntAlloc returns the offset of a free count block of the class.
func (x *indexV1) cntAlloc(class int) int32 {
	for len(x.cntFree) <= class {
		x.cntFree = append(x.cntFree, nil)
	}
	if f := x.cntFree[class]; len(f) > 0 {
		off := f[len(f)-1]
		x.cntFree[class] = f[:len(f)-1]
		return off
	}
	off := len(x.cnts)
	x.cnts = append(x.cnts, make([]int32, 2<<class)...)
	return int32(off)
}

func (x *indexV1) cntRelease(c v1extCounts) {
	x.cntFree[c.class] = append(x.cntFree[c.class], c.off)
}

func (x *indexV1) unref(d int, list []uint64, i int) {
	j := x.lookup(list[i], list[i]*v1golden)
	if j < 0 {
		panic("policy: resident index lost a block")
	}
	s := &x.slots[j]
	if v1offChain(s, list, i) {
		s.bad--
		x.bad--
	}
	if s.holder >= 0 {
		if s.cnt--; s.cnt == 0 {
			x.perWorker[d]--
			x.del(j)
		}
		return
	}
	e := int(^s.holder)
	c := x.extCnt[e]
	r := x.rank(e, d)
	cs := x.cnts[c.off : int(c.off)+int(s.cnt)]
	if cs[r]--; cs[r] > 0 {
		return
	}
	// d no longer holds the block: close its count.
	copy(cs[r:], cs[r+1:])
	x.extBits[e*x.words+d>>6] &^= 1 << (uint(d) & 63)
	x.perWorker[d]--
	if s.cnt--; s.cnt > 1 {
		if c.class > 0 && int(s.cnt) <= 2<<c.class/4 {
			x.moveCounts(e, int(s.cnt), c.class-1)
		}
		return
	}
	// One holder left: back to the inline representation.
	w := x.extBits[e*x.words : (e+1)*x.words]
	for k, word := range w {
		if word != 0 {
			h := k<<6 + bits.TrailingZeros64(word)
			s.holder, s.cnt = int32(h), cs[0]
			w[k] = 0
			break
		}
	}
	x.cntRelease(c)
	x.extFree = append(x.extFree, int32(e))
}

// newExt returns an empty ext record (no holders) with a count block of
// the smallest class.
func (x *indexV1) newExt() int {
	c := v1extCounts{off: x.cntAlloc(0)}
	if n := len(x.extFree); n > 0 {
		e := x.extFree[n-1]
		x.extFree = x.extFree[:n-1]
		x.extCnt[e] = c
		return int(e)
	}
	e := len(x.extBits) / x.words
	x.extBits = append(x.extBits, make([]uint64, x.words)...)
	x.extCnt = append(x.extCnt, c)
	return e
}

// add adds v to out[d] for every worker d holding v1slot i.
func (x *indexV1) add(i int, v int, out []int) {
	h := x.slots[i].holder
	if h >= 0 {
		out[h] += v
		return
	}
	e := int(^h) * x.words
	for w, word := range x.extBits[e : e+x.words] {
		for word != 0 {
			out[w<<6+bits.TrailingZeros64(word)] += v
			word &= word - 1
		}
	}
}

// same reports whether slots i and j are held by the same workers.
func (x *indexV1) same(i, j int) bool {
	hi, hj := x.slots[i].holder, x.slots[j].holder
	if hi >= 0 || hj >= 0 || hi == hj {
		return hi == hj
	}
	a, b := int(^hi)*x.words, int(^hj)*x.words
	for w := 0; w < x.words; w++ {
		if x.extBits[a+w] != x.extBits[b+w] {
			return false
		}
	}
	return true
}

// addDiff adds v to out[d] for every worker d holding v1slot i but not v1slot j.
func (x *indexV1) addDiff(i, j int, v int, out []int) {
	hi := x.slots[i].holder
	if hi >= 0 {
		if !x.holds(j, int(hi)) {
			out[hi] += v
		}
		return
	}
	a := int(^hi) * x.words
	hj := x.slots[j].holder
	for w := 0; w < x.words; w++ {
		word := x.extBits[a+w]
		if hj >= 0 {
			if int(hj)>>6 == w {
				word &^= 1 << (uint(hj) & 63)
			}
		} else {
			word &^= x.extBits[int(^hj)*x.words+w]
		}
		for word != 0 {
			out[w<<6+bits.TrailingZeros64(word)] += v
			word &= word - 1
		}
	}
}

// Overlap adds, for every worker d, |{i : blocks[i] ∈ resident[d]}| to
// out[d] (len(out) must be Workers()). Duplicate hashes in blocks count
// once each time they appear (the list reading of |prefix_hashes ∩
// resident[d]|). It looks every block up; consecutive hits on blocks held by
// the same workers are added in one go.
func (x *indexV1) Overlap(blocks []uint64, out []int) {
	prev, run := -1, 0
	slots, filter, fshift := x.slots, x.filter, x.fshift
	for _, b := range blocks {
		h := b * v1golden
		if filter[h>>fshift] == 0 {
			continue
		}
		i := x.lookup(b, h)
		if i < 0 {
			continue
		}
		if prev >= 0 && (slots[i].holder == slots[prev].holder || x.same(i, prev)) {
			run++
			continue
		}
		if prev >= 0 {
			x.add(prev, run, out)
		}
		prev, run = i, 1
	}
	if prev >= 0 {
		x.add(prev, run, out)
	}
}

// OverlapOwned is Overlap using session s's record on worker d as a hint
// (typically the session's pinned worker). If the index is Chained and
// blocks shares a prefix of c ≥ chainMin blocks with that record, the
// prefix is counted by chainOverlap in O(k·log c) lookups (k = distinct
// worker sets along the chain) plus one memory comparison (none when the
// record was SetImmutable from blocks' own backing array, see
// record.sharedPrefix), and only the rest is looked up block by block. The result is always Overlap's. It
// returns c (0 when the shortcut was not taken).
func (x *indexV1) OverlapOwned(blocks []uint64, d int, s int32, out []int) int {
	if d < 0 || x.bad != 0 || len(blocks) < chainMin {
		x.Overlap(blocks, out)
		return 0
	}
	hint := x.owned[ownerKey{int32(d), s}]
	c := 0
	if len(hint.blocks) >= chainMin {
		c = hint.sharedPrefix(blocks)
	}
	if c < chainMin {
		x.Overlap(blocks, out)
		return 0
	}
	x.chainOverlap(blocks[:c], out)
	x.Overlap(blocks[c:], out)
	return c
}

// chainOverlap counts a chain: chain must equal a prefix of an owner's
// list and the index must be Chained. Then every chain[i]
// is recorded at position i after chain[i-1] wherever it is recorded, so
// the set of workers holding chain[i] shrinks as i grows, and worker d
// holds exactly chain[0..p_d] for some p_d. Divide and conquer finds the
// positions where the set changes. It returns chain[len-1]'s v1slot.
func (x *indexV1) chainOverlap(chain []uint64, out []int) int {
	n := len(chain)
	lo, hi := x.lookup(chain[0], chain[0]*v1golden), x.lookup(chain[n-1], chain[n-1]*v1golden)
	if lo < 0 || hi < 0 {
		panic("policy: chain hint is not recorded in the resident index")
	}
	x.add(hi, n, out)
	x.dc(chain, 0, n-1, lo, hi, out)
	return hi
}

// dc handles workers that hold chain[lo] (v1slot sl) but not chain[hi] (v1slot
// sh): each gets its last position + 1.
func (x *indexV1) dc(chain []uint64, lo, hi, sl, sh int, out []int) {
	for {
		if x.same(sl, sh) {
			return
		}
		if hi == lo+1 {
			x.addDiff(sl, sh, lo+1, out)
			return
		}
		mid := int(uint(lo+hi) >> 1)
		sm := x.lookup(chain[mid], chain[mid]*v1golden)
		if sm < 0 {
			panic("policy: chain hint is not recorded in the resident index")
		}
		x.dc(chain, lo, mid, sl, sm, out)
		lo, sl = mid, sm
	}
}

// LongestPrefix sets out[d] to the length of the longest prefix of blocks
// recorded on worker d (len(out) must be Workers()). It walks the prefix
// until no worker matches any more.
func (x *indexV1) LongestPrefix(blocks []uint64, out []int) {
	clear(out)
	x.walkPrefix(blocks, 0, x.aliveScratch(), out)
}

// LongestPrefixOwned is LongestPrefix using session s's record on worker d
// as a hint, as OverlapOwned does: if the index is Chained and blocks
// shares a prefix of c ≥ chainMin blocks with that record, every worker
// holds a prefix of blocks[:c] (see chainOverlap), whose length
// chainOverlap finds in O(k·log c) lookups; only the workers holding all
// of it are followed further, block by block. The result is always
// LongestPrefix's. It returns c (0 when the shortcut was not taken).
func (x *indexV1) LongestPrefixOwned(blocks []uint64, d int, s int32, out []int) int {
	c := 0
	if d >= 0 && x.bad == 0 && len(blocks) >= chainMin {
		if hint := x.owned[ownerKey{int32(d), s}]; len(hint.blocks) >= chainMin {
			c = hint.sharedPrefix(blocks)
		}
	}
	if c < chainMin {
		x.LongestPrefix(blocks, out)
		return 0
	}
	clear(out)
	hi := x.chainOverlap(blocks[:c], out)
	alive := x.aliveScratch()
	clear(alive)
	if h := x.slots[hi].holder; h >= 0 {
		alive[h>>6] = 1 << (uint(h) & 63)
	} else {
		copy(alive, x.extBits[int(^h)*x.words:])
	}
	x.walkPrefix(blocks, c, alive, out)
	return c
}

func (x *indexV1) aliveScratch() []uint64 {
	if cap(x.alive) < x.words {
		x.alive = make([]uint64, x.words)
	}
	return x.alive[:x.words]
}

// walkPrefix continues LongestPrefix at blocks[start]: for start > 0,
// alive holds the workers that hold blocks[:start] (their out is start).
func (x *indexV1) walkPrefix(blocks []uint64, start int, alive []uint64, out []int) {
	for i := start; i < len(blocks); i++ {
		j := x.find(blocks[i])
		if j < 0 {
			return
		}
		live := uint64(0)
		h := x.slots[j].holder
		for w := range alive {
			var m uint64
			switch {
			case h < 0:
				m = x.extBits[int(^h)*x.words+w]
			case int(h)>>6 == w:
				m = 1 << (uint(h) & 63)
			}
			if i == 0 {
				alive[w] = m
			} else {
				alive[w] &= m
			}
			live |= alive[w]
			for word := alive[w]; word != 0; word &= word - 1 {
				out[w<<6+bits.TrailingZeros64(word)] = i + 1
			}
		}
		if live == 0 {
			return
		}
	}
}

// Chained reports whether every recorded block sits at one position after
// one predecessor in every owner list that holds it (the condition for
// Route's chain shortcut).
func (x *indexV1) Chained() bool { return x.bad == 0 }

func (x *indexV1) home(k uint64) (int, uint8) {
	h := k * v1golden
	return int(h >> x.shift), uint8(h>>(x.shift-8)) | 1
}

// Tag groups: lookups load 8 tags at once and find the first empty v1slot
// and the candidate matches with SWAR arithmetic (no per-v1slot branch).
// tags has 8 trailing bytes mirroring tags[0:8], so a group that runs off
// the end reads the wrapped-around tags.
const (
	v1lsb = 0x0101010101010101
	v1msb = 0x8080808080808080
)

// v1zeroBytes marks (with 0x80) the zero bytes of w; the lowest mark is
// exact, higher ones may be false positives.
func v1zeroBytes(w uint64) uint64 { return (w - v1lsb) &^ w & v1msb }

// find returns the v1slot of block k, or -1.
func (x *indexV1) find(k uint64) int {
	h := k * v1golden
	if x.filter[h>>x.fshift] == 0 {
		return -1
	}
	return x.lookup(k, h)
}

// lookup is find without the filter (for blocks expected to be present);
// h is k * v1golden.
func (x *indexV1) lookup(k, h uint64) int {
	i, t := int(h>>x.shift), uint64(uint8(h>>(x.shift-8))|1)
	for {
		g := binary.LittleEndian.Uint64(x.tags[i:])
		z := v1zeroBytes(g)
		m := v1zeroBytes(g ^ (t * v1lsb))
		if z != 0 {
			m &= (z & -z) - 1 // matches before the first empty v1slot
		}
		for ; m != 0; m &= m - 1 {
			j := (i + bits.TrailingZeros64(m)>>3) & x.mask
			if x.slots[j].key == k {
				return j
			}
		}
		if z != 0 {
			return -1
		}
		i = (i + 8) & x.mask
	}
}

func (x *indexV1) filterAdd(k uint64) {
	f := &x.filter[(k*v1golden)>>x.fshift]
	if *f < 255 {
		*f++
	}
}

func (x *indexV1) filterDel(k uint64) {
	f := &x.filter[(k*v1golden)>>x.fshift]
	if *f < 255 {
		*f--
	}
}

func (x *indexV1) setTag(i int, t uint8) {
	x.tags[i] = t
	if i < 8 {
		x.tags[len(x.slots)+i] = t
	}
}

// insert places k (absent) in an empty v1slot and returns it.
func (x *indexV1) insert(k uint64) int {
	if (x.used+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	i, t := x.home(k)
	for x.tags[i] != 0 {
		i = (i + 1) & x.mask
	}
	x.setTag(i, t)
	x.slots[i] = v1slot{key: k}
	x.used++
	x.filterAdd(k)
	return i
}

func (x *indexV1) grow() {
	oldTags, oldSlots := x.tags, x.slots
	x.alloc(x.shift - 1)
	for j, tg := range oldTags[:len(oldSlots)] {
		if tg == 0 {
			continue
		}
		i, t := x.home(oldSlots[j].key)
		for x.tags[i] != 0 {
			i = (i + 1) & x.mask
		}
		x.setTag(i, t)
		x.slots[i] = oldSlots[j]
		x.used++
		x.filterAdd(oldSlots[j].key)
	}
}

// del empties v1slot i with backward-shift deletion (no tombstones).
func (x *indexV1) del(i int) {
	x.filterDel(x.slots[i].key)
	mask := x.mask
	j := i
	for {
		j = (j + 1) & mask
		if x.tags[j] == 0 {
			break
		}
		h := int((x.slots[j].key * v1golden) >> x.shift)
		// The entry at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		var stay bool
		if i <= j {
			stay = i < h && h <= j
		} else {
			stay = i < h || h <= j
		}
		if !stay {
			x.setTag(i, x.tags[j])
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.setTag(i, 0)
	x.slots[i] = v1slot{}
	x.used--
}

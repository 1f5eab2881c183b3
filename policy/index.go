package policy

import (
	"math/bits"
	"unsafe"
)

// ResidentIndex is the router's estimate of which prefix blocks are resident
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
//     its slot; a block held by several workers moves to an "ext" record with
//     a bitset of its holders (⌈n/64⌉ words) and one owner count per holder,
//     stored in bitset order (holder d's count is at the rank of bit d), so
//     a shared block costs O(n/64 + holders) bytes, not O(n) (see extCounts);
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
type ResidentIndex struct {
	n     int // workers
	words int // bitset words per ext record

	tags  []uint8 // 0: empty slot
	slots []slot
	shift uint // 64 - log2(len(slots))
	// filter counts the blocks whose hash falls in each of its buckets
	// (4 per slot; a count that reaches 255 sticks): a zero count proves a
	// block absent with one byte load, which is what a cold request's
	// lookups mostly are.
	filter []uint8
	fshift uint
	mask   int
	used   int // occupied slots

	extBits []uint64    // words per ext record
	extCnt  []extCounts // per ext record: where its owner counts live in cnts
	extFree []int32

	// cnts holds the ext records' owner counts in blocks of 2<<class
	// int32s; cntFree[class] lists the free blocks of that class.
	cnts    []int32
	cntFree [][]int32

	owned     map[ownerKey]record // (worker, session) → its recorded blocks
	perWorker []int               // distinct blocks per worker
	bad       int                 // occurrences off their block's canonical (parent, depth)

	alive []uint64   // LongestPrefix scratch
	spare [][]uint64 // owner lists of removed records, for reuse
}

const maxSpare = 32

type ownerKey struct {
	d int32
	s int32
}

// record is one (worker, session) owner list. With src == nil, blocks is
// the index's own copy (Set). Otherwise blocks is the caller's slice itself
// and src its first element's address (SetImmutable: the caller promised
// that its elements never change), so the index never writes or recycles
// it, and any slice starting at src agrees with blocks on their common
// length without comparing them.
type record struct {
	blocks []uint64
	src    *uint64
}

// sharedPrefix is the length of the longest common prefix of blocks and
// r.blocks.
func (r record) sharedPrefix(blocks []uint64) int {
	if r.src != nil && len(blocks) > 0 && unsafe.SliceData(blocks) == r.src {
		return min(len(blocks), len(r.blocks))
	}
	return commonPrefix(blocks, r.blocks)
}

// extCounts locates an ext record's owner counts: cnts[off : off+2<<class],
// of which the first (holders) are in use, holder d's at rank(e, d).
type extCounts struct {
	off   int32
	class int32
}

type slot struct {
	key    uint64
	parent uint64 // canonical predecessor (meaningful when depth > 0)
	depth  int32  // canonical position in an owner list
	bad    int32  // occurrences that disagree with (parent, depth)
	holder int32  // >= 0: the only worker holding the block; < 0: ^ext record
	cnt    int32  // single holder: its owner count; ext: number of holder workers
}

const (
	golden        = 0x9E3779B97F4A7C15
	minShift      = 64 - 4 // 16 slots
	filterBits    = 2
	filterPerSlot = 1 << filterBits
)

// NewResidentIndex returns an empty index over n workers.
func NewResidentIndex(n int) *ResidentIndex {
	x := &ResidentIndex{
		n: n, words: (n + 63) / 64,
		owned:     make(map[ownerKey]record),
		perWorker: make([]int, n),
	}
	x.alloc(minShift)
	return x
}

func (x *ResidentIndex) alloc(shift uint) {
	size := 1 << (64 - shift)
	x.tags = make([]uint8, size+8)
	x.slots = make([]slot, size)
	x.filter = make([]uint8, size*filterPerSlot)
	x.shift, x.mask, x.used = shift, size-1, 0
	x.fshift = shift - filterBits
}

// Workers is the number of workers the index covers.
func (x *ResidentIndex) Workers() int { return x.n }

// Blocks is the number of distinct blocks resident somewhere.
func (x *ResidentIndex) Blocks() int { return x.used }

// WorkerBlocks is the number of distinct blocks recorded on worker d.
func (x *ResidentIndex) WorkerBlocks(d int) int { return x.perWorker[d] }

// Owned returns the blocks recorded for session s on worker d (nil if none).
// The slice belongs to the index: read it, do not keep or modify it.
func (x *ResidentIndex) Owned(d int, s int32) []uint64 { return x.owned[ownerKey{int32(d), s}].blocks }

// OwnedPrefix is the length of the longest common prefix of blocks and
// Owned(d, s), compared in O(1) when the record was set by SetImmutable
// from a slice with the same first element as blocks.
func (x *ResidentIndex) OwnedPrefix(d int, s int32, blocks []uint64) int {
	return x.owned[ownerKey{int32(d), s}].sharedPrefix(blocks)
}

// Set records blocks as session s's resident blocks on worker d, replacing
// whatever was recorded for (d, s). Blocks kept from the previous record are
// not touched, so a growing prefix costs only its new blocks. The index
// keeps its own copy: callers may reuse their slices.
func (x *ResidentIndex) Set(d int, s int32, blocks []uint64) { x.set(d, s, blocks, nil) }

// SetImmutable is Set for a caller that promises never to change the
// elements of blocks (as workload.Request.Blocks, immutable once emitted).
// The index keeps blocks itself instead of a copy (the record keeps the
// caller's array alive), and so knows where it starts: a later
// SetImmutable, OverlapOwned or OwnedPrefix for the same (d, s) with a
// slice starting at the same element — the next turn of a session whose
// requests share one append-only backing array — knows the common prefix
// (the shorter length) without comparing the blocks. Breaking the promise
// makes the index's answers wrong.
func (x *ResidentIndex) SetImmutable(d int, s int32, blocks []uint64) {
	x.set(d, s, blocks, unsafe.SliceData(blocks))
}

func (x *ResidentIndex) set(d int, s int32, blocks []uint64, src *uint64) {
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
	if rec.src != nil {
		// A borrowed list: never written or recycled, and none of it is
		// ours to keep.
		old, common = nil, 0
	}
	if len(blocks) == 0 {
		x.recycle(old)
		delete(x.owned, k)
		return
	}
	if src != nil {
		x.recycle(old)
		x.owned[k] = record{blocks: blocks, src: src}
		return
	}
	switch {
	case cap(old) >= len(blocks):
		old = old[:len(blocks)]
	case old == nil:
		old = x.buffer(len(blocks))
	default:
		old = append(old[:common:common], make([]uint64, len(blocks)-common)...)
	}
	copy(old[common:], blocks[common:])
	x.owned[k] = record{blocks: old}
}

// buffer returns a list of length n, reusing a removed record's if one is
// large enough.
func (x *ResidentIndex) buffer(n int) []uint64 {
	for i, b := range x.spare {
		if cap(b) >= n {
			last := len(x.spare) - 1
			x.spare[i] = x.spare[last]
			x.spare[last] = nil
			x.spare = x.spare[:last]
			return b[:n]
		}
	}
	return make([]uint64, n, n+n/4)
}

func (x *ResidentIndex) recycle(b []uint64) {
	if cap(b) == 0 {
		return
	}
	if len(x.spare) < maxSpare {
		x.spare = append(x.spare, b[:0])
		return
	}
	// Keep the larger buffers.
	for i, o := range x.spare {
		if cap(o) < cap(b) {
			x.spare[i] = b[:0]
			return
		}
	}
}

// Remove forgets session s's blocks on worker d.
func (x *ResidentIndex) Remove(d int, s int32) {
	k := ownerKey{int32(d), s}
	rec := x.owned[k]
	old := rec.blocks
	for i := range old {
		x.unref(d, old, i)
	}
	if rec.src == nil {
		x.recycle(old)
	}
	delete(x.owned, k)
}

// Has reports whether block b is recorded resident on worker d.
func (x *ResidentIndex) Has(d int, b uint64) bool {
	i := x.find(b)
	return i >= 0 && x.holds(i, d)
}

func (x *ResidentIndex) holds(i, d int) bool {
	h := x.slots[i].holder
	if h >= 0 {
		return int(h) == d
	}
	return x.extBits[int(^h)*x.words+d>>6]&(1<<(uint(d)&63)) != 0
}

// offChain reports whether occurrence list[i] disagrees with slot s's
// canonical position.
func offChain(s *slot, list []uint64, i int) bool {
	return int(s.depth) != i || (i > 0 && s.parent != list[i-1])
}

func (x *ResidentIndex) ref(d int, list []uint64, i int) {
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
	if offChain(s, list, i) {
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
func (x *ResidentIndex) rank(e, d int) int {
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
func (x *ResidentIndex) moveCounts(e, held int, class int32) extCounts {
	old := x.extCnt[e]
	c := extCounts{off: x.cntAlloc(int(class)), class: class}
	copy(x.cnts[c.off:int(c.off)+held], x.cnts[old.off:int(old.off)+held])
	x.cntRelease(old)
	x.extCnt[e] = c
	return c
}

// cntAlloc returns the offset of a free count block of the class.
func (x *ResidentIndex) cntAlloc(class int) int32 {
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

func (x *ResidentIndex) cntRelease(c extCounts) {
	x.cntFree[c.class] = append(x.cntFree[c.class], c.off)
}

func (x *ResidentIndex) unref(d int, list []uint64, i int) {
	j := x.lookup(list[i], list[i]*golden)
	if j < 0 {
		panic("policy: resident index lost a block")
	}
	s := &x.slots[j]
	if offChain(s, list, i) {
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
func (x *ResidentIndex) newExt() int {
	c := extCounts{off: x.cntAlloc(0)}
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

// add adds v to out[d] for every worker d holding slot i.
func (x *ResidentIndex) add(i int, v int, out []int) {
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
func (x *ResidentIndex) same(i, j int) bool {
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

// addDiff adds v to out[d] for every worker d holding slot i but not slot j.
func (x *ResidentIndex) addDiff(i, j int, v int, out []int) {
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

package policy

import (
	"bytes"
	"math/bits"
	"unsafe"
)

// Overlap adds, for every worker d, |{i : blocks[i] ∈ resident[d]}| to
// out[d] (len(out) must be Workers()). Duplicate hashes in blocks count
// once each time they appear (the list reading of |prefix_hashes ∩
// resident[d]|). It looks every block up; consecutive hits on blocks held by
// the same workers are added in one go.
func (x *ResidentIndex) Overlap(blocks []uint64, out []int) {
	prev, run := -1, 0
	slots, filter, fshift := x.slots, x.filter, x.fshift
	for _, b := range blocks {
		h := b * golden
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

// chainMin is the shortest verified chain worth the divide-and-conquer
// (shorter ones are simply scanned). A variable so tests can set it to 1.
var chainMin = 8

// OverlapOwned is Overlap using session s's record on worker d as a hint
// (typically the session's pinned worker). If the index is Chained and
// blocks shares a prefix of c ≥ chainMin blocks with that record, the
// prefix is counted by chainOverlap in O(k·log c) lookups (k = distinct
// worker sets along the chain) plus one memory comparison (none when the
// record was SetImmutable from blocks' own backing array, see
// record.sharedPrefix), and only the rest is looked up block by block. The result is always Overlap's. It
// returns c (0 when the shortcut was not taken).
func (x *ResidentIndex) OverlapOwned(blocks []uint64, d int, s int32, out []int) int {
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
// positions where the set changes. It returns chain[len-1]'s slot.
func (x *ResidentIndex) chainOverlap(chain []uint64, out []int) int {
	n := len(chain)
	lo, hi := x.lookup(chain[0], chain[0]*golden), x.lookup(chain[n-1], chain[n-1]*golden)
	if lo < 0 || hi < 0 {
		panic("policy: chain hint is not recorded in the resident index")
	}
	x.add(hi, n, out)
	x.dc(chain, 0, n-1, lo, hi, out)
	return hi
}

// dc handles workers that hold chain[lo] (slot sl) but not chain[hi] (slot
// sh): each gets its last position + 1.
func (x *ResidentIndex) dc(chain []uint64, lo, hi, sl, sh int, out []int) {
	for {
		if x.same(sl, sh) {
			return
		}
		if hi == lo+1 {
			x.addDiff(sl, sh, lo+1, out)
			return
		}
		mid := int(uint(lo+hi) >> 1)
		sm := x.lookup(chain[mid], chain[mid]*golden)
		if sm < 0 {
			panic("policy: chain hint is not recorded in the resident index")
		}
		x.dc(chain, lo, mid, sl, sm, out)
		lo, sl = mid, sm
	}
}

func u64bytes(s []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*8)
}

// commonPrefix is the length of the longest common prefix of a and b. It
// compares 4 KB chunks with bytes.Equal (vectorised) and walks only the
// first chunk that differs element by element.
func commonPrefix(a, b []uint64) int {
	n := min(len(a), len(b))
	const chunk = 512
	i := 0
	for i < n {
		j := min(i+chunk, n)
		if !bytes.Equal(u64bytes(a[i:j]), u64bytes(b[i:j])) {
			break
		}
		i = j
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// LongestPrefix sets out[d] to the length of the longest prefix of blocks
// recorded on worker d (len(out) must be Workers()). It walks the prefix
// until no worker matches any more.
func (x *ResidentIndex) LongestPrefix(blocks []uint64, out []int) {
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
func (x *ResidentIndex) LongestPrefixOwned(blocks []uint64, d int, s int32, out []int) int {
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

func (x *ResidentIndex) aliveScratch() []uint64 {
	if cap(x.alive) < x.words {
		x.alive = make([]uint64, x.words)
	}
	return x.alive[:x.words]
}

// walkPrefix continues LongestPrefix at blocks[start]: for start > 0,
// alive holds the workers that hold blocks[:start] (their out is start).
func (x *ResidentIndex) walkPrefix(blocks []uint64, start int, alive []uint64, out []int) {
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

package policy

import (
	"encoding/binary"
	"math/bits"

	"github.com/pdemu/pdemu/internal/hashrun"
)

// Has reports whether block b is recorded resident on worker d.
func (x *ResidentIndex) Has(d int, b uint64) bool {
	p := x.first(b)
	if p < 0 {
		return false
	}
	if x.flag[p]&posDup == 0 {
		return x.valid(p) && x.holds(&x.segs[x.pseg[p]], int32(d))
	}
	return x.heldElsewhere(b, -1, int32(d))
}

// run locates blocks[0] (blocks non-empty) and the blocks that follow it
// in the arena, each at its hash's only position: it returns their
// segment and how many there are (n ≥ 1); or, for a dead run (a removed
// chain), s == nil and its length; or a dup hash (dup, n = 1); or an
// absent one (nil, 1).
func (x *ResidentIndex) run(blocks []uint64) (s *iseg, n int, dup bool) {
	p := x.first(blocks[0])
	if p < 0 {
		return nil, 1, false
	}
	if x.flag[p]&posDup != 0 {
		return nil, 1, true
	}
	s = &x.segs[x.pseg[p]]
	if p < s.lo || p >= s.hi {
		// Dead, and so are the blocks after it that follow it here (a
		// removed chain): compare the hashes, then find the first live
		// or dup position, reading each segment's range once.
		m := 1 + hashrun.Prefix(blocks[1:], x.keys[p+1:])
		return nil, int(x.deadUntil(p+1, p+int32(m)) - p), false
	}
	n = 1 + hashrun.Prefix(blocks[1:], x.keys[p+1:s.hi])
	if s.dupc != 0 {
		for m := 1; m < n; m++ {
			if x.flag[int(p)+m]&posDup != 0 {
				return s, m, false
			}
		}
	}
	return s, n, false
}

// deadUntil returns the first position in [from, to) that is live or
// flagged posDup, or to if there is none (the flags are read 8 at a time).
func (x *ResidentIndex) deadUntil(from, to int32) int32 {
	return from + int32(firstFlagged(x.flag[from:to], posDup|posLive))
}

// liveFrom returns the first live position in [from, to), or to if
// there is none.
func (x *ResidentIndex) liveFrom(from, to int32) int32 {
	return from + int32(firstFlagged(x.flag[from:to], posLive))
}

// setFlag sets (on) or clears bit f of every element of flags, 8 at a
// time, and returns the OR of their previous values.
func setFlag(flags []uint8, f uint8, on bool) uint8 {
	const ones = 0x0101010101010101
	m := ones * uint64(f)
	var had uint64
	i := 0
	for ; i+8 <= len(flags); i += 8 {
		w := binary.LittleEndian.Uint64(flags[i:])
		had |= w
		if on {
			w |= m
		} else {
			w &^= m
		}
		binary.LittleEndian.PutUint64(flags[i:], w)
	}
	for ; i < len(flags); i++ {
		had |= uint64(flags[i])
		if on {
			flags[i] |= f
		} else {
			flags[i] &^= f
		}
	}
	had |= had >> 32
	had |= had >> 16
	had |= had >> 8
	return uint8(had)
}

// firstFlagged is the index of the first element of flags with bit f set,
// or len(flags).
func firstFlagged(flags []uint8, f uint8) int {
	const ones = 0x0101010101010101
	i := 0
	for ; i+8 <= len(flags); i += 8 {
		if w := binary.LittleEndian.Uint64(flags[i:]) & (ones * uint64(f)); w != 0 {
			return i + bits.TrailingZeros64(w)/8
		}
	}
	for ; i < len(flags); i++ {
		if flags[i]&f != 0 {
			return i
		}
	}
	return len(flags)
}

// Overlap adds, for every worker d, |{i : blocks[i] ∈ resident[d]}| to
// out[d] (len(out) must be Workers()). Duplicate hashes in blocks count
// once each time they appear (the list reading of |prefix_hashes ∩
// resident[d]|). It looks up one hash per run of blocks that follow each
// other in a segment.
func (x *ResidentIndex) Overlap(blocks []uint64, out []int) {
	filt, fshift := x.filt, 64-x.tbits-2
	for i := 0; i < len(blocks); {
		// Most blocks of a request whose session was removed have no
		// entry: the filter says so without a call (filterBit).
		if h := (blocks[i] * golden) >> fshift; filt[h>>6]&(1<<(h&63)) == 0 {
			i++
			continue
		}
		s, n, dup := x.run(blocks[i:])
		switch {
		case dup:
			x.addUnion(blocks[i], out)
		case s != nil:
			x.addHolders(s, n, out)
		}
		i += n
	}
}

// addHolders adds v to out[d] for every holder d of segment s.
func (x *ResidentIndex) addHolders(s *iseg, v int, out []int) {
	if s.hd >= 0 {
		out[s.hd] += v
		return
	}
	for _, h := range x.hsets[^s.hd] {
		out[h.d] += v
	}
}

// addUnion adds 1 to out[d] for every worker d holding hash k at one of
// its positions.
func (x *ResidentIndex) addUnion(k uint64, out []int) {
	for e := range x.entries(k) {
		if !x.valid(e) {
			continue
		}
		s := &x.segs[x.pseg[e]]
		x.eachHolder(s, func(d int32) {
			if !x.heldBefore(k, e, d) {
				out[d]++
			}
		})
	}
}

// heldBefore reports whether d holds hash k at a live position whose
// entry comes before e's in the table.
func (x *ResidentIndex) heldBefore(k uint64, e, d int32) bool {
	for f := range x.entries(k) {
		if f == e {
			return false
		}
		if x.valid(f) && x.holds(&x.segs[x.pseg[f]], d) {
			return true
		}
	}
	return false
}

func (x *ResidentIndex) eachHolder(s *iseg, fn func(d int32)) {
	if s.hd >= 0 {
		fn(s.hd)
		return
	}
	for _, h := range x.hsets[^s.hd] {
		fn(h.d)
	}
}

// chainMin is the shortest verified chain worth the chain shortcut (the
// per-block index's; see OverlapOwned). A variable so tests can set it to 1.
var chainMin = 8

// OverlapOwned is Overlap using session s's record on worker d as a hint
// (typically the session's pinned worker). It returns c, the length of
// the prefix blocks shares with that record, when the index is Chained and
// c ≥ chainMin — the prefix the per-block index counted with its chain
// shortcut, which the router counts as a chained route — and 0 otherwise.
// The counts are always Overlap's (which walks segments, not blocks, with
// or without a hint).
func (x *ResidentIndex) OverlapOwned(blocks []uint64, d int, s int32, out []int) int {
	c, p, n := x.ownedHint(blocks, d, s)
	if n == 0 {
		// No live record to walk: perhaps a removed one's (a ghost).
		x.Overlap(blocks[x.overlapGhost(blocks, d, s, out):], out)
		return c
	}
	// blocks[:n] is the record's path from the root: walk it up, a
	// segment at a time (its holders are its hashes').
	if w, end, ok := x.onePathHolder(blocks[0], p, n); ok {
		out[w] += end
		x.Overlap(blocks[n:], out)
		return c
	}
	for p >= 0 {
		seg := &x.segs[x.pseg[p]]
		if end := min(int(seg.depth+seg.hi-seg.lo), n); end > int(seg.depth) {
			x.addHolders(seg, end-int(seg.depth), out)
		}
		p = seg.parent
	}
	x.Overlap(blocks[n:], out)
	return c
}

// ownedHint looks session s's record on worker d up once for
// OverlapOwned and LongestPrefixOwned. c is their result: the prefix
// blocks shares with the record when the index is Chained and it is ≥
// chainMin, else 0. tail is the record's tail and n that shared prefix's
// length, when the prefix is worth walking as a path: n > 0 and no
// segment of the record's path holds a hash at several positions.
// Otherwise n is 0.
func (x *ResidentIndex) ownedHint(blocks []uint64, d int, s int32) (c int, tail int32, n int) {
	if d < 0 || len(blocks) == 0 {
		return 0, -1, 0
	}
	r := x.owned[ownerKey{int32(d), s}]
	shared := r.sharedPrefix(blocks)
	if x.bad == 0 && shared >= chainMin {
		c = shared
	}
	if r.tail == 0 || shared == 0 {
		return c, -1, 0
	}
	if x.dupLive != 0 {
		for p := r.tail - 1; p >= 0; {
			seg := &x.segs[x.pseg[p]]
			if seg.dupc != 0 {
				return c, -1, 0
			}
			p = seg.parent
		}
	}
	return c, r.tail - 1, shared
}

// LongestPrefix sets out[d] to the length of the longest prefix of blocks
// recorded on worker d (len(out) must be Workers()). It walks the prefix
// run by run until no worker matches any more.
func (x *ResidentIndex) LongestPrefix(blocks []uint64, out []int) {
	clear(out)
	x.walkPrefix(blocks, 0, x.aliveScratch(), out)
}

func (x *ResidentIndex) aliveScratch() []uint64 {
	if cap(x.alive) < 2*x.words {
		x.alive = make([]uint64, 2*x.words)
	}
	return x.alive[:x.words]
}

// walkPrefix continues LongestPrefix at blocks[start]: for start > 0,
// alive holds the workers that hold blocks[:start] (their out is start).
func (x *ResidentIndex) walkPrefix(blocks []uint64, start int, alive []uint64, out []int) {
	next := x.alive[x.words : 2*x.words]
	for i := start; i < len(blocks); {
		s, n, dup := x.run(blocks[i:])
		if s == nil && !dup {
			return
		}
		clear(next)
		live := false
		keep := func(d int32) {
			if i == 0 || alive[d>>6]&(1<<(uint(d)&63)) != 0 {
				next[d>>6] |= 1 << (uint(d) & 63)
				out[d] = i + n
				live = true
			}
		}
		if dup {
			for e := range x.entries(blocks[i]) {
				if x.valid(e) {
					x.eachHolder(&x.segs[x.pseg[e]], keep)
				}
			}
		} else {
			x.eachHolder(s, keep)
		}
		if !live {
			return
		}
		alive, next = next, alive
		i += n
	}
}

// LongestPrefixOwned is LongestPrefix using session s's record on worker d
// as a hint, as OverlapOwned does, and returns OverlapOwned's c. The result
// is always LongestPrefix's.
func (x *ResidentIndex) LongestPrefixOwned(blocks []uint64, d int, s int32, out []int) int {
	c, p, n := x.ownedHint(blocks, d, s)
	if n == 0 {
		x.LongestPrefix(blocks, out)
		return c
	}
	// blocks[:n] is the record's path: along it holders only shrink, so a
	// worker's prefix ends with the deepest path segment it holds.
	clear(out)
	alive := x.aliveScratch()
	clear(alive)
	if w, end, ok := x.onePathHolder(blocks[0], p, n); ok {
		out[w] = end
		alive[w>>6] |= 1 << (uint(w) & 63)
		x.walkPrefix(blocks, n, alive, out)
		return c
	}
	deepest := true
	for p >= 0 {
		seg := &x.segs[x.pseg[p]]
		if end := min(int(seg.depth+seg.hi-seg.lo), n); end > int(seg.depth) {
			x.eachHolder(seg, func(w int32) {
				if out[w] == 0 {
					out[w] = end
				}
				if deepest {
					alive[w>>6] |= 1 << (uint(w) & 63)
				}
			})
			deepest = false
		}
		p = seg.parent
	}
	x.walkPrefix(blocks, n, alive, out)
	return c
}

// onePathHolder does the walk up a record's path (OverlapOwned,
// LongestPrefixOwned) in O(1) when the path's deepest segment (the one at
// tail, which must reach into blocks[:n]) and its root segment (found by
// b0's only position) have the same single holder w: holders only grow
// toward the root (a list through a segment goes through its ancestors),
// so w holds every segment between and no other worker holds any. It
// returns w and the deepest segment's end (depth), the length of the
// path's part in blocks[:n]. On agentic traces, where sessions share no
// blocks, it replaces a walk of one segment per turn (~40 on trace A's
// dp4).
func (x *ResidentIndex) onePathHolder(b0 uint64, tail int32, n int) (w int32, end int, ok bool) {
	deep := &x.segs[x.pseg[tail]]
	end = min(int(deep.depth+deep.hi-deep.lo), n)
	if deep.hd < 0 || end <= int(deep.depth) {
		return 0, 0, false
	}
	r := x.first(b0)
	if r < 0 || x.flag[r]&posDup != 0 || !x.valid(r) {
		return 0, 0, false
	}
	if root := &x.segs[x.pseg[r]]; root.depth != 0 || root.lo != r || root.hd != deep.hd {
		return 0, 0, false
	}
	return deep.hd, end, true
}

package policy

import (
	"github.com/pdemu/pdemu/internal/freelist"
	"github.com/pdemu/pdemu/internal/hashrun"
)

// The resident index's segments (see ResidentIndex): runs of consecutive
// trie nodes with the same holders, and the operations that walk, split,
// create, revive and free them.

// iseg is a segment: arena positions [lo, hi), the nodes at depths depth,
// depth+1, ... of every list through it. A free segment has lo == hi.
type iseg struct {
	lo, hi int32
	parent int32 // the position before lo on every path through it; -1: a root
	depth  int32
	occ    int32 // lists through the segment (the sum of its holder counts)
	offc   int32 // positions flagged posOff
	dupc   int32 // positions flagged posDup
	hd     int32 // >= 0: the only holder; < 0: ^index of its list in hsets
	hn     int32 // the only holder's count of lists
}

// Position flags.
const (
	posDup   = 1 << iota // the hash has other positions in the table
	posOff               // its occurrences are off the hash's canonical context
	posCanon             // the hash has a canon entry (set by compaction only)
	posLive              // the position holds a live node (its segment's range covers it)
)

// posCtx is an occurrence's context: its predecessor (0 at depth 0) and
// its depth.
type posCtx struct {
	parent uint64
	depth  int32
}

// valid reports whether position p holds a live node.
func (x *ResidentIndex) valid(p int32) bool { return x.flag[p]&posLive != 0 }

// ctx is the context of live (or being born) position p.
func (x *ResidentIndex) ctx(p int32) posCtx {
	s := &x.segs[x.pseg[p]]
	c := posCtx{depth: s.depth + p - s.lo}
	switch {
	case c.depth == 0:
	case p > s.lo:
		c.parent = x.keys[p-1]
	default:
		c.parent = x.keys[s.parent]
	}
	return c
}

// touchHomes reads the table slot each of blocks' hashes probes first,
// before place inserts them one by one. The reads are independent, so the
// processor overlaps their cache misses; place's own probes, each waiting
// for the one before it to finish, then find the slots in cache. On a
// large index (a 200k-request run's table is tens of MB) place was a
// quarter of the run's CPU, mostly that wait. Only appended runs are
// touched: touching every block create is given (most of a revived chain)
// cost 21 % more instructions on BenchmarkIndexAgentic.
func (x *ResidentIndex) touchHomes(blocks []uint64) {
	tab, shift := x.tab, 32-x.tbits
	var sum int32
	for _, k := range blocks {
		sum += tab[tabHash(k)>>shift].pos
	}
	x.touched += sum
}

// touchAhead is how many blocks of an appended run touchHomes reads ahead.
const touchAhead = 64

func (x *ResidentIndex) newSeg() int32 {
	if id, ok := freelist.Pop(&x.segFree); ok {
		return id
	}
	x.segs = append(x.segs, iseg{})
	return int32(len(x.segs) - 1)
}

// release takes one list of d off the path ending at position p (a
// segment's end) from depth common on, and returns the position at depth
// common-1 (-1 when common is 0), a segment's end.
func (x *ResidentIndex) release(d int, p int32, common int) int32 {
	c := int32(common)
	for p >= 0 {
		id := x.pseg[p]
		s := &x.segs[id]
		if s.depth >= c {
			p = s.parent
			x.decr(id, int32(d))
			continue
		}
		if s.depth+s.hi-s.lo > c {
			low, up := x.split(id, s.lo+c-s.depth)
			x.decr(up, int32(d))
			return x.segs[low].hi - 1
		}
		return p
	}
	return -1
}

// extend adds one list of d along blocks[i:] after position q (a
// segment's end, or -1 for a root) and returns the position of its last
// node, a segment's end. The arena has room for len(blocks)-i new
// positions (reserve). hint is where blocks lay before (a ghost's ranges,
// see create), or nil.
func (x *ResidentIndex) extend(d int, q int32, blocks []uint64, i int, hint []ghostRun) int32 {
	for i < len(blocks) {
		id := x.child(q, blocks[i])
		if id < 0 {
			break
		}
		s := &x.segs[id]
		m := 1 + hashrun.Prefix(blocks[i+1:], x.keys[s.lo+1:s.hi])
		if m < int(s.hi-s.lo) {
			id, _ = x.split(id, s.lo+int32(m))
		}
		x.incr(id, int32(d))
		q = x.segs[id].hi - 1
		i += m
	}
	if i < len(blocks) {
		q = x.create(int32(d), q, blocks, i, hint)
	}
	return q
}

// child returns the live segment that starts with hash k after position q
// (a segment's end, or -1: a root segment), or -1.
func (x *ResidentIndex) child(q int32, k uint64) int32 {
	if !x.maybe(k) {
		return -1
	}
	fp := tabHash(k)
	for i, p := x.probe(k, fp, x.home(fp)); p >= 0; i, p = x.probe(k, fp, (i+1)&x.tmask) {
		id := x.pseg[p]
		if s := &x.segs[id]; s.lo == p && s.hi > p && s.parent == q {
			return id
		}
		if x.flag[p]&posDup == 0 {
			break // the hash's only position
		}
	}
	return -1
}

// create adds one list of d along blocks[i:], none of whose nodes exist,
// after position q, reviving runs of dead positions that hold the same
// hashes and appending the rest, and returns the last node's position.
// hint, when not nil, is the ranges, root first, of a ghost whose list
// blocks agrees with (the session's record, removed, set again): a dead
// position of its ranges holds the block at its depth, so the run from
// there is revived without a lookup or a comparison.
func (x *ResidentIndex) create(d, q int32, blocks []uint64, i int, hint []ghostRun) int32 {
	n := len(blocks)
	depth := int32(i)
	for i < n {
		// A run: revived in place if the first hash has a dead position,
		// else appended up to the next hash that has one.
		lo := int32(len(x.keys))
		var hi int32
		for len(hint) > 0 && int(hint[0].depth+hint[0].hi-hint[0].lo) <= i {
			hint = hint[1:]
		}
		if p := x.hinted(hint, i, n); p >= 0 {
			r := hint[0]
			lo, hi = p, x.liveFrom(p+1, r.lo+min(r.hi-r.lo, int32(n)-r.depth))
		} else if p := x.place(blocks[i], lo); p >= 0 {
			// The dead run that follows p and holds the next blocks:
			// compare the hashes, then stop at the first live position.
			m := hashrun.Prefix(blocks[i+1:], x.keys[p+1:])
			hi = x.liveFrom(p+1, p+1+int32(m))
			lo = p
		} else {
			// Appended: the run's next blocks are probably new too, so
			// their table slots are read ahead, touchAhead at a time
			// (touchHomes); a revived run needs no slots.
			hi = lo + 1
			for j := i + 1; j < n; j++ {
				if (j-i)%touchAhead == 1 {
					x.touchHomes(blocks[j:min(n, j+touchAhead)])
				}
				if x.place(blocks[j], lo) >= 0 {
					break
				}
				hi++
			}
		}
		x.birth(lo, hi, q, depth, d)
		i += int(hi - lo)
		depth += hi - lo
		q = hi - 1
	}
	return q
}

// hinted returns the position of depth i in hint[0] (the first range
// that reaches past i) if it is dead, else -1.
func (x *ResidentIndex) hinted(hint []ghostRun, i, n int) int32 {
	if len(hint) == 0 || int(hint[0].depth) > i {
		return -1
	}
	p := hint[0].lo + int32(i) - hint[0].depth
	if x.valid(p) {
		return -1
	}
	return p
}

// birth makes positions [lo, hi) a live segment after position q at depth
// depth, with one list of d through it.
func (x *ResidentIndex) birth(lo, hi, q, depth, d int32) {
	id := x.newSeg()
	s := &x.segs[id]
	*s = iseg{lo: lo, hi: hi, parent: q, depth: depth, occ: 1, hd: d, hn: 1}
	ids := x.pseg[lo:hi]
	for j := range ids {
		ids[j] = id
	}
	dups := int32(0)
	flags := x.flag[lo:hi]
	// The positions are flagged live, 8 at a time, and the common case
	// had no other flag set and has nothing to clear. A position is off
	// only while its hash has other positions (posDup) or, after a
	// compaction, keeps its canon entry (posCanon): checkSegs checks it.
	if setFlag(flags, posLive, true)&(posCanon|posDup|posOff) != 0 {
		for j, f := range flags {
			f &^= posOff
			if f&posCanon != 0 {
				// The only position of a hash that was resident at the
				// last compaction: it is canonical now.
				delete(x.canon, x.keys[lo+int32(j)])
				f &^= posCanon
			}
			flags[j] = f
			if f&posDup != 0 {
				dups++
			}
		}
	}
	s.dupc = dups
	x.dupLive += int(dups)
	x.live += int(hi - lo)
	if dups == 0 {
		x.used += int(hi - lo)
		x.perWorker[d] += int(hi - lo)
		return
	}
	offs := int32(0)
	for p := lo; p < hi; p++ {
		if x.flag[p]&posDup == 0 {
			x.used++
			x.perWorker[d]++
			continue
		}
		// Positions of this segment from p on are not resident yet.
		k := x.keys[p]
		resident, heldByD := false, false
		for e := range x.entries(k) {
			if e == p || !x.valid(e) || x.pseg[e] == id && e > p {
				continue
			}
			resident = true
			if x.pseg[e] == id || x.holds(&x.segs[x.pseg[e]], d) {
				heldByD = true
			}
		}
		if !resident {
			x.canon[k] = x.ctx(p)
			x.used++
		} else if x.ctx(p) != x.canon[k] {
			x.flag[p] |= posOff
			offs++
		}
		if !heldByD {
			x.perWorker[d]++
		}
	}
	x.segs[id].offc = offs
	x.bad += int(offs)
}

// incr adds one list of d through segment id.
func (x *ResidentIndex) incr(id, d int32) {
	s := &x.segs[id]
	s.occ++
	x.bad += int(s.offc)
	if x.addHolder(id, d) == 1 {
		x.gain(id, d, 1)
	}
}

// decr removes one list of d through segment id, freeing it when it was
// the last.
func (x *ResidentIndex) decr(id, d int32) {
	s := &x.segs[id]
	s.occ--
	x.bad -= int(s.offc)
	if x.removeHolder(id, d) == 0 {
		x.gain(id, d, -1)
	}
	if x.segs[id].occ == 0 {
		x.death(id)
	}
}

// gain counts the hashes of segment id into (v = 1) or out of (v = -1)
// worker d's distinct blocks when d starts or stops holding it (its
// holders already say so).
func (x *ResidentIndex) gain(id, d, v int32) {
	s := &x.segs[id]
	if s.dupc == 0 {
		x.perWorker[d] += int(v * (s.hi - s.lo))
		return
	}
	for p := s.lo; p < s.hi; p++ {
		if x.flag[p]&posDup == 0 || x.firstIn(p, id, s.lo) && !x.heldElsewhere(x.keys[p], id, d) {
			x.perWorker[d] += int(v)
		}
	}
}

// firstIn reports whether p is the first position of its hash in segment
// id (which starts at lo).
func (x *ResidentIndex) firstIn(p, id, lo int32) bool {
	for e := range x.entries(x.keys[p]) {
		if e >= lo && e < p && x.pseg[e] == id {
			return false
		}
	}
	return true
}

// heldElsewhere reports whether a live position of hash k outside segment
// id is held by d (d < 0: by anyone).
func (x *ResidentIndex) heldElsewhere(k uint64, id, d int32) bool {
	for e := range x.entries(k) {
		if x.pseg[e] == id || !x.valid(e) {
			continue
		}
		if d < 0 || x.holds(&x.segs[x.pseg[e]], d) {
			return true
		}
	}
	return false
}

// death frees segment id, which no list passes through any more.
func (x *ResidentIndex) death(id int32) {
	s := &x.segs[id]
	lo, hi := s.lo, s.hi
	x.live -= int(hi - lo)
	setFlag(x.flag[lo:hi], posLive, false)
	if s.hd < 0 {
		x.hsets[^s.hd] = x.hsets[^s.hd][:0]
		x.hfree = append(x.hfree, ^s.hd)
	}
	dups := s.dupc
	x.dupLive -= int(dups)
	*s = iseg{}
	x.segFree = append(x.segFree, id)
	if dups == 0 {
		x.used -= int(hi - lo)
		return
	}
	for p := lo; p < hi; p++ {
		if x.flag[p]&posDup == 0 || x.firstIn(p, id, lo) && !x.heldElsewhere(x.keys[p], id, -1) {
			x.used--
		}
	}
}

// split cuts segment id at position k (lo < k < hi) into [lo, k) and
// [k, hi) and returns their ids; the smaller side takes a new id.
func (x *ResidentIndex) split(id, k int32) (low, up int32) {
	nid := x.newSeg()
	s := x.segs[id]
	lower := iseg{lo: s.lo, hi: k, parent: s.parent, depth: s.depth, occ: s.occ}
	upper := iseg{lo: k, hi: s.hi, parent: k - 1, depth: s.depth + k - s.lo, occ: s.occ}
	small, big := &lower, &upper
	low, up = nid, id
	if k-s.lo > s.hi-k {
		small, big = &upper, &lower
		low, up = id, nid
	}
	for p := small.lo; p < small.hi; p++ {
		x.pseg[p] = nid
		if f := x.flag[p]; f != 0 {
			if f&posOff != 0 {
				small.offc++
			}
			if f&posDup != 0 {
				small.dupc++
			}
		}
	}
	big.offc, big.dupc = s.offc-small.offc, s.dupc-small.dupc
	big.hd, big.hn = s.hd, s.hn
	x.segs[id] = *big
	x.segs[nid] = *small
	x.copyHolders(nid, id)
	return low, up
}

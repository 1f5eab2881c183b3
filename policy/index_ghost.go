package policy

import (
	"cmp"
	"slices"
	"unsafe"
)

// Ghosts: where a removed record's list still lies in the arena, so that
// OverlapOwned for the session's next request skips it without a lookup.
//
// On an overloaded agentic run most requests belong to a session whose
// record on its pinned worker was evicted: its chain is dead in the arena
// (kept for revival), and Overlap walked it run by run — a table probe,
// a comparison of the run's hashes with the arena and a scan for live
// positions per turn the session had recorded — to count nothing (1P3D on
// trace A: 94 % of the requests, 5.5 M of the 6.1 M blocks Overlap
// walked; 17 of the 30 ms its index traffic takes, replayed).
//
// A ghost is kept by Remove for a record set by SetImmutable: its list
// (where the caller's immutable slice starts, and its length) and the
// arena ranges of its path's segments at removal. Until the next compaction an arena position keeps
// its hash (positions are only appended, and revival reuses them as they
// are), so range r still holds list[r.depth : r.depth+r.hi-r.lo]; and a
// request slice that starts at the list's first element agrees with it on
// their common length (the SetImmutable promise). A block of that common
// prefix whose position is neither live nor flagged posDup has no
// resident position at all (posDup marks every position of a hash that has
// several) and counts for no worker; only the ranges that hold a live or
// posDup position are walked by Overlap, which is exact on any part of a
// request (its count is a sum over the blocks). The session's record set
// again on the worker from the same list (re-admitted after the eviction)
// revives the ghost's dead ranges in place the same way, without a lookup
// per run or a comparison of its hashes (create's hint). Compaction
// moves the positions and forgets the ghosts; a Bound index keeps none.
type ghost struct {
	src      *uint64 // the list's first element
	n        int32   // the list's length
	off, len int32   // its ranges: ghostRuns[off : off+len]
}

// ghostRun is one segment's range on a removed record's path: positions
// [lo, hi), at depths from depth on.
type ghostRun struct{ lo, hi, depth int32 }

// A ghost keeps its list's array alive (while it lives no other list can
// start at its address) until the next compaction. Its runs live in one
// slab, x.ghostRuns, which a replaced ghost leaves garbage in: the slab is
// packed when its garbage outweighs its live runs. Every ghost is dropped
// when their runs outnumber the arena's positions or their lists hold
// more than 8 times as many blocks (ghosts are a shortcut, not state: the
// index answers the same without them), so the runs and the arrays they
// keep stay within a small multiple of the arena. (The lists of one
// session's ghosts on several workers share their positions: on 1P3D
// trace A they reach twice the arena's positions, with runs at 3 % of
// them.)

// keepGhost records the path of (d, s)'s record rec, about to be removed,
// as its ghost.
func (x *ResidentIndex) keepGhost(k ownerKey, rec record) {
	if rec.src == nil || rec.tail == 0 || x.bounded {
		return
	}
	if x.ghosts == nil {
		x.ghosts = make(map[ownerKey]ghost)
	}
	if old, ok := x.ghosts[k]; ok {
		x.ghostLive -= int(old.len)
		x.ghostBlocks -= int(old.n)
	}
	off := len(x.ghostRuns)
	for p := rec.tail - 1; p >= 0; {
		s := &x.segs[x.pseg[p]]
		x.ghostRuns = append(x.ghostRuns, ghostRun{s.lo, s.hi, s.depth})
		p = s.parent
	}
	slices.Reverse(x.ghostRuns[off:]) // root first
	g := ghost{rec.src, int32(len(rec.blocks)), int32(off), int32(len(x.ghostRuns) - off)}
	x.ghosts[k] = g
	x.ghostLive += int(g.len)
	x.ghostBlocks += int(g.n)
	switch {
	case x.ghostLive > len(x.keys)+ghostSlack || x.ghostBlocks > 8*len(x.keys)+ghostSlack:
		x.forgetGhosts()
	case len(x.ghostRuns) > 2*x.ghostLive+ghostSlack:
		x.packGhosts()
	}
}

// ghostSlack is the ghost runs kept beyond the bounds of keepGhost; a
// variable so tests can make packGhosts and forgetGhosts frequent.
var ghostSlack = 1024

// packGhosts moves the runs of the ghosts in the map down over the
// garbage, in place: in order of their offsets, each lands at or below
// where it was (so the slab, once large enough, is not reallocated).
func (x *ResidentIndex) packGhosts() {
	order := x.ghostOrder[:0]
	for k := range x.ghosts {
		order = append(order, k)
	}
	slices.SortFunc(order, func(a, b ownerKey) int { return cmp.Compare(x.ghosts[a].off, x.ghosts[b].off) })
	w := int32(0)
	for _, k := range order {
		g := x.ghosts[k]
		copy(x.ghostRuns[w:], x.ghostRuns[g.off:g.off+g.len])
		g.off = w
		x.ghosts[k] = g
		w += g.len
	}
	x.ghostRuns, x.ghostOrder = x.ghostRuns[:w], order
}

// ghostOf returns (d, s) = k's ghost's ranges and how long a prefix a
// list starting at src shares with the ghost's list of n blocks (0: no
// ghost, or another list).
func (x *ResidentIndex) ghostOf(k ownerKey, src *uint64, n int) ([]ghostRun, int) {
	if len(x.ghosts) == 0 || src == nil {
		return nil, 0
	}
	g, ok := x.ghosts[k]
	if !ok || g.src != src {
		return nil, 0
	}
	return x.ghostRuns[g.off : g.off+g.len], min(n, int(g.n))
}

// ghostHint is, for a set of (d, s) = k from src, its ghost's ranges
// (create's hint) when it has no record and the ghost's list starts at
// src; else nil.
func (x *ResidentIndex) ghostHint(k ownerKey, rec record, src *uint64) []ghostRun {
	if rec.tail != 0 {
		return nil
	}
	runs, _ := x.ghostOf(k, src, 0)
	return runs
}

// forgetGhosts drops every ghost (compaction moves the positions).
func (x *ResidentIndex) forgetGhosts() {
	clear(x.ghosts)
	x.ghostRuns = x.ghostRuns[:0]
	x.ghostLive, x.ghostBlocks = 0, 0
}

// overlapGhost adds to out the counts of the prefix blocks shares with
// (d, s)'s ghost and returns its length (0: no ghost, or none shared);
// Overlap counts the rest.
func (x *ResidentIndex) overlapGhost(blocks []uint64, d int, s int32, out []int) int {
	if len(blocks) == 0 {
		return 0
	}
	runs, n := x.ghostOf(ownerKey{int32(d), s}, unsafe.SliceData(blocks), len(blocks))
	for _, r := range runs {
		if int(r.depth) >= n {
			continue
		}
		hi := min(r.hi, r.lo+int32(n)-r.depth)
		if j := x.deadUntil(r.lo, hi); j < hi {
			x.Overlap(blocks[r.depth+j-r.lo:r.depth+hi-r.lo], out)
		}
	}
	return n
}

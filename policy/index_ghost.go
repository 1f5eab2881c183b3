package policy

import (
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
// walked, 21 % of the run's CPU).
//
// A ghost is kept by Remove for a record set by SetImmutable: its list
// (the caller's immutable slice) and the arena ranges of its path's
// segments at removal. Until the next compaction an arena position keeps
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
// moves the positions and forgets the ghosts; a Bound index keeps none (a
// ghost keeps the caller's list alive).
type ghost struct {
	blocks   []uint64
	off, len int32 // its ranges: ghostRuns[off : off+len]
}

// ghostRun is one segment's range on a removed record's path: positions
// [lo, hi), at depths from depth on.
type ghostRun struct{ lo, hi, depth int32 }

// keepGhost records the path of (d, s)'s record rec, about to be removed,
// as its ghost.
func (x *ResidentIndex) keepGhost(k ownerKey, rec record) {
	if rec.src == nil || rec.tail == 0 || x.bounded {
		return
	}
	off := len(x.ghostRuns)
	for p := rec.tail - 1; p >= 0; {
		s := &x.segs[x.pseg[p]]
		x.ghostRuns = append(x.ghostRuns, ghostRun{s.lo, s.hi, s.depth})
		p = s.parent
	}
	slices.Reverse(x.ghostRuns[off:]) // root first
	if x.ghosts == nil {
		x.ghosts = make(map[ownerKey]ghost)
	}
	x.ghosts[k] = ghost{rec.blocks, int32(off), int32(len(x.ghostRuns) - off)}
}

// ghostHint is, for a set of (d, s) = k from src, its ghost's ranges
// (create's hint) when it has no record and the ghost's list starts at
// src; else nil.
func (x *ResidentIndex) ghostHint(k ownerKey, rec record, src *uint64) []ghostRun {
	if len(x.ghosts) == 0 || src == nil || rec.tail != 0 {
		return nil
	}
	g, ok := x.ghosts[k]
	if !ok || unsafe.SliceData(g.blocks) != src {
		return nil
	}
	return x.ghostRuns[g.off : g.off+g.len]
}

// forgetGhosts drops every ghost (compaction moves the positions).
func (x *ResidentIndex) forgetGhosts() {
	clear(x.ghosts)
	x.ghostRuns = x.ghostRuns[:0]
}

// overlapGhost adds to out the counts of the prefix blocks shares with
// (d, s)'s ghost and returns its length (0: no ghost, or none shared);
// Overlap counts the rest.
func (x *ResidentIndex) overlapGhost(blocks []uint64, d int, s int32, out []int) int {
	if len(x.ghosts) == 0 || len(blocks) == 0 {
		return 0
	}
	g, ok := x.ghosts[ownerKey{int32(d), s}]
	if !ok || unsafe.SliceData(g.blocks) != unsafe.SliceData(blocks) {
		return 0
	}
	n := min(len(blocks), len(g.blocks))
	for _, r := range x.ghostRuns[g.off : g.off+g.len] {
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

package policy

import "unsafe"

// ResidentIndex is the router's estimate of which prefix blocks are resident
// on which decode worker: for every worker d, resident[d] is the set of
// block hashes in the owner lists recorded for d, one list per (worker,
// session), so that evicting a session removes exactly the blocks it
// contributed (blocks shared by several sessions on one worker, such as a
// system prompt, stay until the last owner goes).
//
// Its answers are those of a per-block inverted index, hash → holders with
// an owner count per holder (the reference, indexV1 in index_v1_test.go, is
// the implementation this one replaced; index_diff_test.go checks them
// against each other on random operation sequences), but its state is kept
// per segment, radix-tree style:
//
//   - the owner lists form a trie (a list is a path from a root; lists with
//     a common prefix share its nodes), stored as segments: runs of
//     consecutive trie nodes, their hashes consecutive in one arena (keys);
//     a segment is entered at its first node and ends where some list ends
//     or branches, so every list is a chain of whole segments and every
//     node of a segment has the same holders: the segment keeps, per
//     holder worker, how many of its lists pass through (hd/hn inline for
//     one holder, a small list for several);
//   - so recording a session's next turn touches the segments of its new
//     and dropped suffix (a segment per branch, not a node per block),
//     removing a session touches the segments of its path, and Overlap and
//     LongestPrefix look up one hash per segment of the request's path and
//     compare the rest with the arena (vectorised), instead of one lookup
//     per block;
//   - a hash table maps a hash to its arena positions (nothing is deleted
//     from it: a position holds a live node only if it lies in its
//     segment's range, as in gpu.BlockLRU, and is flagged posLive, so
//     that a scan for live positions reads 8 flags at a time); a removed
//     run keeps its positions until the next compaction, and a list that
//     brings the same run back (a session re-recorded after an eviction)
//     revives it in place: one probe per run. When the arena is used up,
//     the live segments are copied to a fresh one and the table rebuilt:
//     O(live nodes) once per ≥ live new positions;
//   - a hash at one position (prefix chains: the hash of a block names its
//     whole prefix) is the fast path. A hash at several positions (reused
//     hashes, duplicates in a list, a chain recorded at another depth) is
//     flagged dup at each; its holders are the union of its positions',
//     computed on demand, so answers stay exact on any input;
//   - a record set by SetImmutable leaves, when removed, a ghost: its
//     path's arena ranges, valid until the next compaction, so that
//     OverlapOwned for the session's next request (an evicted session's:
//     most of an overloaded agentic run's) skips the dead prefix with a
//     scan of its flags, without a lookup (index_ghost.go);
//   - Chained (the condition of the chain shortcut in OverlapOwned and
//     LongestPrefixOwned, which the router counts) keeps the reference's
//     exact meaning: a hash's canonical (predecessor, depth) is that of the
//     occurrence that made it resident, and the index counts owner-list
//     occurrences that disagree. A node knows its occurrences disagree
//     (posOff) from the moment it is created, so the count moves by a
//     segment's off nodes times its change in lists.
//
// Writes (Set, SetImmutable, Remove) need exclusive access; the read
// methods other than LongestPrefix and LongestPrefixOwned (which use a
// scratch vector) may run concurrently with each other, which
// KVC.RouteShared (and bench.SyncKVC) rely on.
type ResidentIndex struct {
	n     int // workers
	words int // bitset words of a worker set

	keys []uint64 // arena: the hash of each position
	pseg []int32  // the segment of each position (meaningful while it is live)
	flag []uint8  // per position: posDup, posOff, posCanon
	// limit is the positions the arena may hold before the next
	// compaction or growth; the table has at least 1.5·limit slots (a load
	// of at most 2/3).
	limit int
	tab   []tabSlot
	filt  []uint64 // see maybe
	tbits uint
	tmask uint32

	segs    []iseg  // segs[0] is never live
	segFree []int32 // free segment ids
	hsets   [][]holder
	hfree   []int32
	hslab   []holder // room for new holder sets (newHset)
	touched int32    // touchHomes' sum, kept so that its reads are not dropped

	records         // owner lists
	perWorker []int // distinct hashes per worker
	used      int   // distinct hashes resident somewhere
	live      int   // live positions
	bad       int   // occurrences off their hash's canonical (parent, depth)
	dupLive   int   // live positions flagged posDup (0: hint paths need no check)
	// canon holds the canonical context of resident hashes at several
	// positions (a hash at one position is canonical there).
	canon map[uint64]posCtx

	alive []uint64 // LongestPrefix scratch (2 worker sets)

	// Removed records' paths (index_ghost.go), until the next compaction.
	ghosts      map[ownerKey]ghost
	ghostRuns   []ghostRun
	ghostLive   int        // runs of the ghosts in the map
	ghostBlocks int        // blocks of their lists
	ghostOrder  []ownerKey // packGhosts scratch

	// Compaction scratch: the live segment ids in position order, and
	// each segment's new start.
	segOrder []int32
	segLo    []int32

	compactions int // (tests)
	tableAllocs int // tables allocated (tests)

	// bounded (Bound): a server's index, whose memory must follow what
	// is resident, not the history of removed sessions.
	bounded bool
}

// Bound makes the index's memory follow its live positions, for a server
// that runs for ever (pdemu serve): the arena keeps at most as many dead
// positions as live ones plus boundedDead, and a compaction gives back
// an arena more than twice the size it needs. Answers are unchanged
// (compaction is exact either way, see TestIndexMatchesV1); only how often a removed session is revived in
// place instead of re-placed differs, which costs CPU, not results.
func (x *ResidentIndex) Bound() { x.bounded = true }

const golden = 0x9E3779B97F4A7C15

// NewResidentIndex returns an empty index over n workers.
func NewResidentIndex(n int) *ResidentIndex {
	x := &ResidentIndex{
		n: n, words: (n + 63) / 64,
		segs:      make([]iseg, 1),
		records:   records{owned: make(map[ownerKey]record)},
		perWorker: make([]int, n),
		canon:     make(map[uint64]posCtx),
	}
	x.compact(64)
	return x
}

// Workers is the number of workers the index covers.
func (x *ResidentIndex) Workers() int { return x.n }

// Blocks is the number of distinct blocks resident somewhere.
func (x *ResidentIndex) Blocks() int { return x.used }

// WorkerBlocks is the number of distinct blocks recorded on worker d.
func (x *ResidentIndex) WorkerBlocks(d int) int { return x.perWorker[d] }

// Chained reports whether every recorded block sits at one position after
// one predecessor in every owner list that holds it (the condition for
// Route's chain shortcut).
func (x *ResidentIndex) Chained() bool { return x.bad == 0 }

// Set records blocks as session s's resident blocks on worker d, replacing
// whatever was recorded for (d, s). Blocks kept from the previous record are
// not touched, so a growing prefix costs only its new segments. The index
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
	common := rec.sharedPrefix(blocks)
	if common < len(blocks) && x.reserve(len(blocks)-common) {
		rec = x.owned[k] // compaction moved its tail
	}
	old := rec.blocks
	q := rec.tail - 1 // the node at depth common-1, or -1
	if common < len(old) {
		q = x.release(d, q, common)
	}
	if common < len(blocks) {
		q = x.extend(d, q, blocks, common, x.ghostHint(k, rec, src))
	}
	x.put(k, rec, blocks, src, common, q+1)
}

// Remove forgets session s's blocks on worker d.
func (x *ResidentIndex) Remove(d int, s int32) {
	k := ownerKey{int32(d), s}
	rec, ok := x.owned[k]
	if !ok {
		return
	}
	x.keepGhost(k, rec)
	if rec.tail > 0 {
		x.release(d, rec.tail-1, 0)
	}
	x.drop(k, rec)
}

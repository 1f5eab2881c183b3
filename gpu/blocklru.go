package gpu

import (
	"slices"

	"github.com/pdemu/pdemu/internal/freelist"
	"github.com/pdemu/pdemu/internal/hashrun"
)

// BlockLRU is a prefix cache of block hashes with an LRU replacement policy
// and a capacity in tokens. Its answers and its eviction order are those of
// a list of blocks, most recent first, changed one block at a time (the
// reference in blocklru_test.go, and the per-block implementation it
// replaced, in blocklru_v1_test.go), but its state is kept per segment:
//
//   - a segment is a run of blocks that sit together in the LRU list, in
//     list order; their hashes are stored consecutively in one arena (keys),
//     so a prompt that repeats a cached chain is matched by comparing its
//     hashes with the arena's, one hash-table probe per segment instead of
//     one per block;
//   - the LRU list links segments, not blocks: touching a cached run of a
//     prompt splits its segment at most twice, and evicting takes blocks
//     off the tail segment's end without visiting them (except to report
//     them);
//   - nothing per block says which segment holds it: two bitmaps over the
//     positions say which are live and which start a segment, and a
//     segment's id is stored at its first position (at), so the segment
//     holding a live position is the one starting at the highest start at
//     or below it (a few word reads). Creating, splitting, trimming or
//     reviving a segment writes its start and 1 bit per block, 64 to a
//     word: no segment id per block (relabelling every revived position
//     and reading back the ids of the dead ones was about 7 % of the
//     agentic dp4 run's instructions);
//   - a block keeps its arena position when it is evicted (or removed),
//     until the next compaction: the hash table maps a hash to that
//     position, and a position holds a block only if its live bit is set.
//     So the table is written when a block is first inserted, never when
//     one is evicted, and a block that comes back (a session's chain
//     re-read after its tail was evicted) is revived in place with the
//     evicted blocks around it that come back with it, by comparing
//     hashes: one probe per run. Positions are allocated downwards, a
//     block has at most one, and they are never reused. When the arena is
//     used up, the live segments are copied to a fresh one in LRU order
//     (adjacent segments of equal block size merge) and the table is
//     rebuilt from them: O(live blocks) once per ≥ live + 2n new blocks.
//
// A chain that comes back lies in pieces, one per turn that grew it
// (each turn's new blocks took the positions free then), and Insert walks
// it from its last block, reviving a piece at a time; finding the block
// before a piece would cost a probe of the table (a cache miss on a table
// that is 16 bytes a position), so a piece's first position also keeps
// where that block was the last time (pred: set when a new run stops at
// a block that has a position, learnt when a revived run's predecessor
// had to be probed for). A hint is taken only where the arena holds that
// block (a block has at most one position), and compaction clears them.
//
// So a block costs one probe when it is first inserted, none when it is
// touched within a known segment, matched, evicted or revived with its
// neighbours, and a revived piece of a chain usually none either. Nothing
// here allocates per block.
type BlockLRU struct {
	capTokens int
	used      int
	live      int // blocks held

	keys []uint64  // arena: the block hash at each position
	at   []posMeta // per position: the segment starting there (where pos.starts says one does), a hint
	pos  posBits   // which positions are live, which start a segment
	bot  int32     // new blocks take positions below bot
	idx  posMap    // hash → position, lazy: dead positions stay in it (see valid)
	runs []lruSeg  // compact's scratch: the merged segments

	segs     []lruSeg // segs[0] is the list sentinel: segs[0].next is most recent
	freeSegs []int32

	trackEvictions bool
	evicted        []uint64
	evictions      int // blocks evicted so far (tracked or not)
}

// posMeta is what a position keeps beside its key: seg, the segment
// starting there, and pred, where the block before the run starting there
// was found in a chain the last time (position + 1; 0: not known). Both
// are read and written only at runs' first positions, so they share a
// cache line: Insert reads pred where it writes seg.
type posMeta struct {
	seg, pred int32
}

// lruSeg is a segment: arena positions [lo, hi), most recent first, each
// block of tokens tokens. A free segment has lo == hi.
type lruSeg struct {
	lo, hi     int32
	tokens     int32
	prev, next int32
}

// NewBlockLRU returns a cache holding at most capTokens tokens.
func NewBlockLRU(capTokens int) *BlockLRU {
	return &BlockLRU{capTokens: capTokens, segs: make([]lruSeg, 1)}
}

// Used is the cached tokens.
func (c *BlockLRU) Used() int { return c.used }

// valid reports whether arena position p holds a live block.
func (c *BlockLRU) valid(p int32) bool { return c.pos.isLive(p) }

// segOf is the segment holding live position p: the one starting at the
// highest start at or below p.
func (c *BlockLRU) segOf(p int32) int32 { return c.at[c.pos.startAtOrBelow(p)].seg }

// mark records that segment s starts at its lo (s not empty).
func (c *BlockLRU) mark(s int32) {
	lo := c.segs[s].lo
	c.pos.setStart(lo)
	c.at[lo].seg = s
}

// lookup returns b's position, or -1 if b is not cached.
func (c *BlockLRU) lookup(b uint64) int32 {
	if p := c.idx.get(b, c.keys); p >= 0 && c.valid(p) {
		return p
	}
	return -1
}

// find is lookup trying hint (a position, or -1) first.
func (c *BlockLRU) find(b uint64, hint int32) int32 {
	if hint >= 0 && c.keys[hint] == b && c.valid(hint) {
		return hint
	}
	return c.lookup(b)
}

// has reports whether b is cached.
func (c *BlockLRU) has(b uint64) bool { return c.lookup(b) >= 0 }

// Peek returns how many leading blocks are cached, without touching the
// LRU order.
func (c *BlockLRU) Peek(blocks []uint64) int {
	n, _ := c.peek(blocks)
	return n
}

// peek is Peek, also returning the position of the last cached leading
// block (-1 if none), where Match starts touching them.
func (c *BlockLRU) peek(blocks []uint64) (int, int32) {
	hint, last := int32(-1), int32(-1)
	for k := 0; k < len(blocks); {
		p := c.find(blocks[k], hint)
		if p < 0 {
			return k, last
		}
		s := &c.segs[c.segOf(p)]
		// The rest of the segment is the cached chain's continuation.
		end := int(s.hi - p)
		rest := blocks[k:]
		lim := min(end, len(rest))
		n := 1 + hashrun.Prefix(c.keys[p+1:int(p)+lim], rest[1:lim])
		k += n
		last = p + int32(n) - 1
		hint = -1
		if n == end && s.next != 0 {
			// The chain probably goes on in the next segment.
			hint = c.segs[s.next].lo
		}
	}
	return len(blocks), last
}

// Match returns how many leading blocks are cached, touching them. Blocks
// of a prefix are touched from the last to the first, so the first block of
// a chain is the most recent: eviction trims prefixes from their tail, like
// a radix cache evicting leaves, and never orphans a chain's tail.
func (c *BlockLRU) Match(blocks []uint64) int {
	n, hint := c.peek(blocks)
	for k := n - 1; k >= 0; {
		p := c.find(blocks[k], hint)
		k, hint = c.touchRun(blocks, k, p)
	}
	return n
}

// touchRun touches blocks[k] (cached at position p) and the blocks before
// it that precede it in its segment, in one move, as touching them one by
// one from the last to the first would. It returns the index of the next
// block to look at and a guess at its position.
func (c *BlockLRU) touchRun(blocks []uint64, k int, p int32) (int, int32) {
	s := c.segOf(p)
	// The segment's blocks before p that match the blocks before
	// blocks[k], compared in chunks (hashrun.Suffix).
	m := hashrun.Suffix(c.keys[c.segs[s].lo:p], blocks[:k])
	lo := p - int32(m)
	k -= m
	// Where blocks[k-1] probably is: the end of the segment before the run.
	hint := int32(-1)
	if lo == c.segs[s].lo {
		if pv := c.segs[s].prev; pv != 0 {
			hint = c.segs[pv].hi - 1
		}
	}
	c.toFront(s, lo, p+1)
	return k - 1, hint
}

// toFront moves positions [lo, hi) of segment s to the front of the list.
func (c *BlockLRU) toFront(s, lo, hi int32) {
	if lo == c.segs[s].lo && c.segs[0].next == s {
		return // already the most recent, in this order
	}
	if lo > c.segs[s].lo {
		_, s = c.split(s, lo)
	}
	if hi < c.segs[s].hi {
		s, _ = c.split(s, hi)
	}
	c.unlink(s)
	c.pushFront(s)
}

// split cuts segment s before position at (strictly inside it) into two
// segments adjacent in the list, the right one taking a new id (no
// position changes hands: the cut is a new start), and returns the left
// and right ones.
func (c *BlockLRU) split(s, at int32) (int32, int32) {
	t := c.newSeg()
	S := &c.segs[s]
	T := &c.segs[t]
	T.tokens = S.tokens
	T.lo, T.hi = at, S.hi
	S.hi = at
	c.mark(t)
	T.prev, T.next = s, S.next
	c.segs[S.next].prev = t
	S.next = t
	return s, t
}

func (c *BlockLRU) newSeg() int32 {
	if t, ok := freelist.Pop(&c.freeSegs); ok {
		return t
	}
	c.segs = append(c.segs, lruSeg{})
	return int32(len(c.segs) - 1)
}

func (c *BlockLRU) freeSeg(s int32) {
	c.segs[s] = lruSeg{}
	c.freeSegs = append(c.freeSegs, s)
}

func (c *BlockLRU) unlink(s int32) {
	S := &c.segs[s]
	c.segs[S.prev].next = S.next
	c.segs[S.next].prev = S.prev
}

func (c *BlockLRU) pushFront(s int32) {
	head := c.segs[0].next
	c.segs[s].prev, c.segs[s].next = 0, head
	c.segs[head].prev = s
	c.segs[0].next = s
}

// remove drops key if cached (not counted as an eviction).
func (c *BlockLRU) remove(key uint64) {
	p := c.lookup(key)
	if p < 0 {
		return
	}
	s := c.segOf(p)
	if p == c.segs[s].hi-1 {
		c.segs[s].hi--
	} else {
		if p > c.segs[s].lo {
			_, s = c.split(s, p)
		}
		// p starts s: the next position does.
		c.pos.clearStart(p)
		if c.segs[s].lo++; c.segs[s].lo < c.segs[s].hi {
			c.mark(s)
		}
	}
	c.pos.clearLive(p, p+1)
	c.used -= int(c.segs[s].tokens)
	c.live--
	if c.segs[s].lo == c.segs[s].hi { // p was its only block
		c.pos.clearStart(p)
		c.unlink(s)
		c.freeSeg(s)
	}
}

// removeAll drops every cached block of blocks (as remove), stopping as
// soon as the cache is empty (a DRAM tier often is).
func (c *BlockLRU) removeAll(blocks []uint64) {
	for _, b := range blocks {
		if c.live == 0 {
			return
		}
		c.remove(b)
	}
}

// takeEvicted returns and clears the keys evicted since the last call.
func (c *BlockLRU) takeEvicted() []uint64 {
	if len(c.evicted) == 0 {
		return nil
	}
	out := c.evicted
	c.evicted = nil
	return out
}

// evictedSince is takeEvicted for a caller done with the keys before the
// cache evicts again: it keeps the buffer, which the next eviction
// overwrites (takeEvicted's fresh slice per call was 16 % of a fused
// worker's eviction cost, in growslice).
func (c *BlockLRU) evictedSince() []uint64 {
	out := c.evicted
	c.evicted = c.evicted[:0]
	return out
}

// evictTo evicts least recently used blocks, the tail segment's last
// first, until at most limit tokens are cached (or nothing is).
func (c *BlockLRU) evictTo(limit int) {
	for c.used > limit {
		t := c.segs[0].prev
		if t == 0 {
			return
		}
		T := &c.segs[t]
		n := min(int(T.hi-T.lo), (c.used-limit+int(T.tokens)-1)/int(T.tokens))
		if c.trackEvictions {
			// The segment's last n blocks, last first.
			l := len(c.evicted)
			c.evicted = slices.Grow(c.evicted, n)[:l+n]
			dst := c.evicted[l:]
			copy(dst, c.keys[int(T.hi)-n:T.hi])
			slices.Reverse(dst) // a copy and a reversal: half the instructions of a reversed copy
		}
		T.hi -= int32(n)
		c.pos.clearLive(T.hi, T.hi+int32(n))
		c.evictions += n
		c.used -= n * int(T.tokens)
		c.live -= n
		if T.lo == T.hi {
			c.pos.clearStart(T.lo)
			c.unlink(t)
			c.freeSeg(t)
		}
	}
}

// setCap sets the capacity, evicting LRU blocks beyond it.
func (c *BlockLRU) setCap(capTokens int) {
	c.capTokens = capTokens
	c.evictTo(capTokens)
}

// Insert caches blocks (each of blockTokens tokens), evicting LRU blocks;
// like Match it leaves the first block most recent.
//
// It walks blocks from the last to the first as the per-block cache did:
// a cached run is touched as in Match; a run of misses takes consecutive
// arena positions (downwards, so the run reads in chain order) as one new
// segment at the front, and then LRU blocks are evicted until it fits —
// the blocks, and the order, that evicting before each block would pick,
// since the run's blocks are the most recent. A run stops at a block
// already cached, including one of its own (a repeated hash), which is
// then touched.
func (c *BlockLRU) Insert(blocks []uint64, blockTokens int) {
	if c.capTokens <= 0 || blockTokens <= 0 || blockTokens > c.capTokens {
		return
	}
	hint := int32(-1)
	from := int32(-1) // the first position of the run after blocks[k], revived or new
	for k := len(blocks) - 1; k >= 0; {
		b := blocks[k]
		q := hint // b's position (a block has at most one), live or not
		if q < c.bot || c.keys[q] != b {
			// (Positions below bot are not in use: a hint there is stale.)
			q = c.idx.get(b, c.keys)
			if q >= 0 && from >= 0 {
				c.at[from].pred = q + 1 // for the next time the run comes back
			}
		}
		hint, from = -1, -1
		switch {
		case q >= 0 && c.valid(q):
			k, hint = c.touchRun(blocks, k, q)
			continue
		case q >= 0:
			// b was evicted (or removed) but its position is still in the
			// arena: revive it, with the evicted blocks before it that
			// match the blocks before b, as one new segment. No table
			// entry changes: they point at these positions already.
			lo := c.deadRun(blocks[:k], q)
			k -= int(q-lo) + 1
			s := c.newSeg()
			c.segs[s] = lruSeg{lo: lo, hi: q + 1, tokens: int32(blockTokens)}
			c.pos.setLive(lo, q+1)
			c.mark(s)
			c.add(s, int(q+1-lo), blockTokens)
			// The run stopped at a live block, blocks[k], or at a
			// mismatch: then blocks[k] is probably where it was the last
			// time this run came back (a session's chain lies in pieces,
			// one per turn that grew it), as pred remembers.
			if k >= 0 && lo > c.bot && c.keys[lo-1] == blocks[k] {
				hint = lo - 1
			} else {
				hint, from = c.at[lo].pred-1, lo
			}
			continue
		}
		// A run of blocks never seen since the last compaction: blocks[k],
		// blocks[k-1], ... take positions bot-1, bot-2, ... (until the
		// arena is full: the rest is another run).
		if c.bot == 0 {
			c.compact(k+1, blockTokens)
		}
		s := c.newSeg()
		hi := c.bot
		c.segs[s] = lruSeg{lo: hi, hi: hi, tokens: int32(blockTokens)}
		for ; k >= 0 && c.bot > 0; k-- {
			b := blocks[k]
			sl := c.idx.claim(b, c.keys)
			if sl.pos != 0 {
				// It has a position (maybe in this run): touched or
				// revived next, found there without probing again, and
				// remembered as this run's predecessor.
				hint = sl.pos - 1
				break
			}
			c.bot--
			c.keys[c.bot] = b
			sl.pos = c.bot + 1
		}
		c.segs[s].lo = c.bot
		c.pos.setLive(c.bot, hi)
		c.mark(s)
		c.at[c.bot].pred = hint + 1
		c.add(s, int(hi-c.bot), blockTokens)
	}
}

// deadRun returns the lowest position lo ≤ q such that positions [lo, q)
// are dead (evicted or removed) and hold the last q-lo blocks of before,
// in order: the evicted run that comes back with the block at q. It
// compares the hashes first (hashrun.Suffix), then finds the highest live
// position among the matching ones in the live bitmap, 64 positions a
// word.
func (c *BlockLRU) deadRun(before []uint64, q int32) int32 {
	m := hashrun.Suffix(c.keys[c.bot:q], before)
	lo := q - int32(m)
	if top := c.pos.highestLive(lo, q); top >= 0 {
		return top + 1
	}
	return lo
}

// add puts new segment s of n blocks at the front, then evicts LRU blocks
// until they fit.
func (c *BlockLRU) add(s int32, n, blockTokens int) {
	c.live += n
	c.used += n * blockTokens
	c.pushFront(s)
	c.evictTo(c.capTokens)
}

// keys lists c's blocks, most recent first.
func (c *BlockLRU) list() []uint64 {
	var out []uint64
	for s := c.segs[0].next; s != 0; s = c.segs[s].next {
		out = append(out, c.keys[c.segs[s].lo:c.segs[s].hi]...)
	}
	return out
}

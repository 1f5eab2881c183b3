// Compaction of BlockLRU's arena (see blocklru.go for the structure).

package gpu

// compact moves the live blocks to the top of the arena, in LRU order,
// with room for n more (blocks of blockTokens tokens) below them, and
// rebuilds the hash table from them (the entries of evicted blocks go).
// The arena doubles while it holds fewer than ghostCacheFulls× the blocks
// the cache can hold, so that evicted blocks keep their positions (are
// revived, not inserted anew) for about three cache-fulls of other
// insertions: the agentic workload's sessions come back after ~12 others;
// with an arena sized only for the live blocks every re-read chain was new
// again. Otherwise it keeps its size, at least 2×(live+n). The table gets
// twice as many slots as the arena has positions (a power of two), so it
// is at most half full until the next compaction: it holds at most one
// entry per position used. At least live + 2n positions are free after a
// compaction, so they cost O(1) per new block, amortised.
//
// Memory: the arena, its segment ids and the table are the cache's only
// per-position arrays (28 bytes a position), each held once: a compaction
// that keeps the size rewrites them in place, one that grows them
// allocates the new ones and drops the old. The live keys are parked in
// the table's slot array while the arena is rewritten (the table is
// rebuilt from them next, and has at least twice as many slots as there
// are live blocks), so a compaction needs no scratch arena and, in place,
// allocates nothing. The segment list and its free list keep their
// longest length, which is at most one segment per live block at the
// peak (plus the sentinel).
func (c *BlockLRU) compact(n, blockTokens int) {
	size := len(c.keys)
	if size < ghostCacheFulls*(c.capTokens/blockTokens) {
		size *= 2
	}
	size = max(size, 2*(c.live+n))
	slots := 128
	for slots < 2*size {
		slots <<= 1
	}
	size = slots / 2
	// The live blocks in list order, parked in the table's slots, and the
	// runs of neighbouring segments of equal block size (lengths in hi),
	// which become the new segments.
	park := c.idx.slots
	runs := c.runs[:0]
	k := 0
	for s := c.segs[0].next; s != 0; s = c.segs[s].next {
		S := &c.segs[s]
		if len(runs) == 0 || runs[len(runs)-1].tokens != S.tokens {
			runs = append(runs, lruSeg{tokens: S.tokens})
		}
		runs[len(runs)-1].hi += S.hi - S.lo
		for _, b := range c.keys[S.lo:S.hi] {
			park[k] = pmSlot{fp: uint32(b >> 32), pos: int32(uint32(b))}
			k++
		}
	}
	c.runs = runs
	if len(c.keys) != size {
		c.keys, c.at = make([]uint64, size), make([]posMeta, size)
	} else {
		clear(c.at) // the hints name old positions
	}
	c.pos.init(size)
	c.bot = int32(size - c.live)
	moved := c.keys[c.bot:]
	for i, sl := range park[:k] {
		moved[i] = uint64(sl.fp)<<32 | uint64(uint32(sl.pos))
	}
	c.idx.init(slots)
	c.segs, c.freeSegs = c.segs[:1], c.freeSegs[:0]
	c.segs[0] = lruSeg{}
	p, last := c.bot, int32(0)
	for _, r := range runs {
		c.segs = append(c.segs, lruSeg{lo: p, hi: p + r.hi, tokens: r.tokens, prev: last})
		t := int32(len(c.segs) - 1)
		c.segs[last].next = t
		c.mark(t)
		last, p = t, p+r.hi
	}
	c.segs[0].prev = last
	c.pos.setLive(c.bot, int32(size))
	for i, b := range moved {
		c.idx.add(pmHash(b), c.bot+int32(i))
	}
}

// ghostCacheFulls is how many cache-fulls of blocks the arena grows to
// hold, live and evicted (see compact).
const ghostCacheFulls = 4

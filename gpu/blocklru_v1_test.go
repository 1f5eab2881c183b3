package gpu

// blockLRUv1 is the per-block BlockLRU that the segment one replaced (one
// node and one hash-table entry per block, three hash-table accesses per
// new block), kept as a second reference for the property tests and as
// the "before" of BenchmarkBlockLRU. Its code is unchanged but for names.

// (Its original doc:) a prefix cache of block hashes with an LRU replacement policy
// and a capacity in tokens. Nodes live in one slice linked by index (no
// per-block allocation, nothing for the GC to chase).
type blockLRUv1 struct {
	capTokens int
	used      int
	m         blockMap
	nodes     []lruNodeV1 // nodes[0] is the list sentinel: nodes[0].next is most recent
	free      []int32

	trackEvictions bool
	evicted        []uint64
}

type lruNodeV1 struct {
	key        uint64
	tokens     int32
	prev, next int32
}

// NewblockLRUv1 returns a cache holding at most capTokens tokens.
func newBlockLRUv1(capTokens int) *blockLRUv1 {
	return &blockLRUv1{capTokens: capTokens, nodes: make([]lruNodeV1, 1)}
}

// Used is the cached tokens.
func (c *blockLRUv1) Used() int { return c.used }

// Match returns how many leading blocks are cached, touching them. Blocks
// of a prefix are touched from the last to the first, so the first block of
// a chain is the most recent: eviction trims prefixes from their tail, like
// a radix cache evicting leaves, and never orphans a chain's tail.
func (c *blockLRUv1) Match(blocks []uint64) int {
	n := c.Peek(blocks)
	var hint int32
	var run lruRunV1
	for k := n - 1; k >= 0; k-- {
		i := c.lookup(blocks[k], hint)
		hint = c.nodes[i].prev
		c.touchDeferred(&run, i)
	}
	c.flush(&run)
	return n
}

// lruRunV1 is a run of nodes touched in a row that sit together in the LRU
// list, head .. tail in list order (0, 0 when empty). Touching nodes one by
// one from the last to the first of such a run leaves it at the front in
// the same order, so it is moved there in one splice when the run ends.
// Only the touched nodes' own positions are deferred: a node's prev link,
// which guides the next lookup, is the same either way (the nodes moved
// later lie after it), and the run is flushed before anything else
// changes the list.
type lruRunV1 struct{ head, tail int32 }

// touchDeferred is touch(i), deferred through run.
func (c *blockLRUv1) touchDeferred(run *lruRunV1, i int32) {
	if run.head != 0 && c.nodes[run.head].prev == i {
		run.head = i
		return
	}
	c.flush(run)
	run.head, run.tail = i, i
}

// flush moves run's nodes to the front of the list and empties it.
func (c *blockLRUv1) flush(run *lruRunV1) {
	h, t := run.head, run.tail
	*run = lruRunV1{}
	if h == 0 || c.nodes[0].next == h {
		return
	}
	p, n := c.nodes[h].prev, c.nodes[t].next
	c.nodes[p].next = n
	c.nodes[n].prev = p
	old := c.nodes[0].next
	c.nodes[t].next = old
	c.nodes[old].prev = t
	c.nodes[h].prev = 0
	c.nodes[0].next = h
}

// Peek is Match without touching the LRU order.
func (c *blockLRUv1) Peek(blocks []uint64) int {
	var i int32
	for k, b := range blocks {
		// After Insert or Match a chain sits in the LRU list in order, first
		// block most recent: the node after blocks[k-1]'s is the best guess
		// for blocks[k].
		if i = c.lookup(b, c.nodes[i].next); i == 0 {
			return k
		}
	}
	return len(blocks)
}

// lookup returns b's node (0 if b is not cached), trying hint first. Insert,
// Match and Peek walk a chain through the LRU list's links, where its
// blocks usually sit in order, instead of hashing every block: a hint is
// taken only if it is a live node holding b (a key has at most one live
// node), otherwise the map decides. Hints are read from a live node's links
// just before use, so they are live or the sentinel; the tokens check (a
// freed node has tokens 0) is a safeguard. The sentinel (node 0) is never a
// hint, whatever its key.
func (c *blockLRUv1) lookup(b uint64, hint int32) int32 {
	if hint != 0 {
		if n := &c.nodes[hint]; n.key == b && n.tokens != 0 {
			return hint
		}
	}
	return c.m.get(b)
}

// remove drops key if cached (not counted as an eviction).
func (c *blockLRUv1) remove(key uint64) {
	i := c.m.get(key)
	if i == 0 {
		return
	}
	c.unlink(i)
	c.m.del(key)
	c.used -= int(c.nodes[i].tokens)
	c.nodes[i].tokens = 0
	c.free = append(c.free, i)
}

// takeEvicted returns and clears the keys evicted since the last call.
func (c *blockLRUv1) takeEvicted() []uint64 {
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
func (c *blockLRUv1) evictedSince() []uint64 {
	out := c.evicted
	c.evicted = c.evicted[:0]
	return out
}

// Insert caches blocks (each of blockTokens tokens), evicting LRU blocks;
// like Match it leaves the first block most recent.
func (c *blockLRUv1) Insert(blocks []uint64, blockTokens int) {
	if c.capTokens <= 0 || blockTokens <= 0 || blockTokens > c.capTokens {
		return
	}
	var hint int32   // where blocks[k] probably is (see lookup)
	var run lruRunV1 // hits whose move to the front is pending
	for k := len(blocks) - 1; k >= 0; k-- {
		b := blocks[k]
		if i := c.lookup(b, hint); i != 0 {
			hint = c.nodes[i].prev // blocks[k-1] if the chain is in order
			c.touchDeferred(&run, i)
			continue
		}
		c.flush(&run)
		hint = 0
		for c.used+blockTokens > c.capTokens {
			c.evictOldest()
		}
		var i int32
		if n := len(c.free); n > 0 {
			i = c.free[n-1]
			c.free = c.free[:n-1]
		} else {
			c.nodes = append(c.nodes, lruNodeV1{})
			i = int32(len(c.nodes) - 1)
		}
		c.nodes[i] = lruNodeV1{key: b, tokens: int32(blockTokens)}
		c.m.put(b, i)
		c.used += blockTokens
		c.pushFront(i)
	}
	c.flush(&run)
}

func (c *blockLRUv1) unlink(i int32) {
	n := &c.nodes[i]
	c.nodes[n.prev].next = n.next
	c.nodes[n.next].prev = n.prev
}

func (c *blockLRUv1) pushFront(i int32) {
	head := c.nodes[0].next
	c.nodes[i].prev, c.nodes[i].next = 0, head
	c.nodes[head].prev = i
	c.nodes[0].next = i
}

func (c *blockLRUv1) evictOldest() {
	i := c.nodes[0].prev
	if i == 0 {
		return
	}
	c.unlink(i)
	if c.trackEvictions {
		c.evicted = append(c.evicted, c.nodes[i].key)
	}
	c.m.del(c.nodes[i].key)
	c.used -= int(c.nodes[i].tokens)
	c.nodes[i].tokens = 0 // freed: no longer a valid lookup hint
	c.free = append(c.free, i)
}

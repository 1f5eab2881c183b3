package bucket

import "time"

// metaStore is a bucket's belief of which instance holds which block: a
// map from block hash to a short linked list of owners, each with the
// time a request last recorded the block there. Owner nodes live in one
// slice linked by index (no allocation per block once warm, nothing for
// the GC to chase).
//
// Expiry is lazy: an owner whose last record is MetaStoreTTL or more in
// the past is ignored by every lookup, unlinked when record walks past it,
// and swept out of the whole map once as many blocks have been recorded
// since the previous sweep as survived it (amortised O(1) per record) and
// TTL/4 of emulated time has passed (so an expired entry is freed at most
// about 1.25·TTL after its last record, once the records pay for it).
//
// # Prefix closure
//
// Longest-prefix lookups (prefixes, longestAny) do not walk the request
// block by block: they rely on each instance's live entries being prefix
// closed, i.e. whenever an instance holds a request's block i it also
// holds blocks 0..i-1, so "instance holds block i" is monotone in i and a
// galloping/binary search finds where it turns false in O(log n) lookups.
// Prefix closure holds when
//   - blocks are prefix-chained (workload.Request.Blocks),
//   - record stores whole chains (Routed records every block of r),
//   - expiry keeps it: a chain's block i is recorded whenever any longer
//     block of the chain is, so last-seen times never grow along a chain,
//   - Evicted removes prefix-chain tails, as gpu.BlockLRU does (it keeps a
//     chain's first block the most recent, so it evicts leaves first).
//
// If the runtime evicted a block from the middle of a chain, the search
// could count blocks past the hole (an over-estimate); the precise policy
// corrects predictions with real probes either way.
type metaStore struct {
	n     int
	ttl   time.Duration
	head  map[uint64]int32 // block → first owner node
	nodes []ownerNode
	free  int32 // head of the free node list, -1 when empty
	live  int   // nodes in use (live or not yet swept)

	recorded  int           // blocks recorded since the last sweep
	sweepNext int           // sweep once recorded reaches it...
	sweptAt   time.Duration // ...and TTL/4 has passed since this sweep

	// Scratch for prefixes.
	mark  []uint32
	epoch uint32
	ids   []int32
}

type ownerNode struct {
	seen time.Duration // last record
	key  uint64        // the block (lets a hint name a node, see recordHinted)
	inst int32         // -1 while free
	next int32         // -1 ends the list
}

func newMetaStore(n int, ttl time.Duration) *metaStore {
	return &metaStore{
		n:    n,
		ttl:  ttl,
		head: make(map[uint64]int32),
		free: -1,
		mark: make([]uint32, n),
		ids:  make([]int32, 0, n),
	}
}

func (s *metaStore) alive(nd *ownerNode, now time.Duration) bool {
	return s.ttl <= 0 || now-nd.seen < s.ttl
}

func (s *metaStore) alloc(key uint64, inst int32, now time.Duration, next int32) int32 {
	s.live++
	if i := s.free; i >= 0 {
		s.free = s.nodes[i].next
		s.nodes[i] = ownerNode{seen: now, key: key, inst: inst, next: next}
		return i
	}
	s.nodes = append(s.nodes, ownerNode{seen: now, key: key, inst: inst, next: next})
	return int32(len(s.nodes) - 1)
}

func (s *metaStore) release(i int32) {
	s.live--
	s.nodes[i] = ownerNode{inst: -1, next: s.free}
	s.free = i
}

// record notes that inst holds blocks, seen at now. Without a TTL the
// last-seen times do not matter, and the leading run inst already holds is
// skipped (found by bisection, relying on prefix closure): a multi-turn
// session's next request then costs about its new blocks.
func (s *metaStore) record(inst int, blocks []uint64, now time.Duration) {
	if s.ttl <= 0 {
		blocks = blocks[s.longest(blocks, inst, now):]
	}
	in := int32(inst)
	for _, b := range blocks {
		s.recordBlock(b, in, now)
	}
	s.recorded += len(blocks)
	if s.ttl > 0 && s.recorded >= max(s.sweepNext, 1024) && now-s.sweptAt >= s.ttl/4 {
		s.sweep(now)
	}
}

// recordBlock is record for one block: it returns the owner node of
// (b, in), whose last-seen time is now at least now; expired owners of b
// it walks past are unlinked.
func (s *metaStore) recordBlock(b uint64, in int32, now time.Duration) int32 {
	h, ok := s.head[b]
	if !ok {
		i := s.alloc(b, in, now, -1)
		s.head[b] = i
		return i
	}
	first, found := h, int32(-1)
	prev := int32(-1)
	for i := h; i >= 0; {
		nd := &s.nodes[i]
		next := nd.next
		switch {
		case nd.inst == in:
			nd.seen = max(nd.seen, now)
			found = i
			prev = i
		case !s.alive(nd, now):
			if prev < 0 {
				first = next
			} else {
				s.nodes[prev].next = next
			}
			s.release(i)
		default:
			prev = i
		}
		i = next
	}
	if found < 0 {
		first = s.alloc(b, in, now, first)
		found = first
	}
	if first != h {
		s.head[b] = first
	}
	return found
}

// recordHinted is record with a hint: hint[k], when it is still the owner
// node of (blocks[k], inst) (a node names its block and instance, and a
// freed node has none), is refreshed in place instead of looking the
// block up, which is what makes a session's next turn on the same
// instance — its previous prompt plus a few blocks — cost little more
// than its new blocks. It returns the owner nodes of blocks, in order,
// for the next call (reusing hint's array). The owner sets, and so every
// lookup, are record's; only expired owners of the hinted blocks are left
// for the sweep instead of being unlinked on the way.
func (s *metaStore) recordHinted(inst int, blocks []uint64, now time.Duration, hint []int32) []int32 {
	if s.ttl <= 0 {
		s.record(inst, blocks, now)
		return hint[:0]
	}
	in := int32(inst)
	out := hint[:0] // out[k] is written after hint[k] is read
	if cap(out) < len(blocks) {
		out = make([]int32, 0, len(blocks)+len(blocks)/2) // room for the next turns
	}
	for k, b := range blocks {
		if k < len(hint) {
			if i := hint[k]; i >= 0 && int(i) < len(s.nodes) {
				if nd := &s.nodes[i]; nd.inst == in && nd.key == b {
					nd.seen = max(nd.seen, now)
					out = append(out, i)
					continue
				}
			}
		}
		out = append(out, s.recordBlock(b, in, now))
	}
	s.recorded += len(blocks)
	if s.recorded >= max(s.sweepNext, 1024) && now-s.sweptAt >= s.ttl/4 {
		s.sweep(now)
	}
	return out
}

// sweep drops every expired owner (and blocks left without one). The map
// is iterated in Go's random order, which changes only which free nodes
// get reused first: owner sets, and so every decision, are the same.
func (s *metaStore) sweep(now time.Duration) {
	s.recorded, s.sweptAt = 0, now
	for b, h := range s.head {
		first := h
		prev := int32(-1)
		for i := h; i >= 0; {
			nd := &s.nodes[i]
			next := nd.next
			if s.alive(nd, now) {
				prev = i
			} else {
				if prev < 0 {
					first = next
				} else {
					s.nodes[prev].next = next
				}
				s.release(i)
			}
			i = next
		}
		switch {
		case first < 0:
			delete(s.head, b)
		case first != h:
			s.head[b] = first
		}
	}
	// The next sweep comes after as many records as nodes survived this
	// one: a sweep's cost (the map's size) is then at most twice the
	// blocks recorded since the previous one.
	s.sweepNext = s.live
}

// evict notes that inst no longer holds blocks.
func (s *metaStore) evict(inst int, blocks []uint64) {
	in := int32(inst)
	for _, b := range blocks {
		h, ok := s.head[b]
		if !ok {
			continue
		}
		first := h
		prev := int32(-1)
		for i := h; i >= 0; i = s.nodes[i].next {
			if s.nodes[i].inst != in {
				prev = i
				continue
			}
			next := s.nodes[i].next
			if prev < 0 {
				first = next
			} else {
				s.nodes[prev].next = next
			}
			s.release(i)
			break
		}
		switch {
		case first < 0:
			delete(s.head, b)
		case first != h:
			s.head[b] = first
		}
	}
}

// holds reports whether inst holds b (live) at now.
func (s *metaStore) holds(b uint64, inst int, now time.Duration) bool {
	h, ok := s.head[b]
	if !ok {
		return false
	}
	for i := h; i >= 0; i = s.nodes[i].next {
		if nd := &s.nodes[i]; int(nd.inst) == inst {
			return s.alive(nd, now)
		}
	}
	return false
}

// held reports whether any instance holds b (live) at now.
func (s *metaStore) held(b uint64, now time.Duration) bool {
	h, ok := s.head[b]
	if !ok {
		return false
	}
	for i := h; i >= 0; i = s.nodes[i].next {
		if s.alive(&s.nodes[i], now) {
			return true
		}
	}
	return false
}

// markHolders stamps mark[inst] with a fresh epoch for every live holder
// of b, and returns the epoch.
func (s *metaStore) markHolders(b uint64, now time.Duration) uint32 {
	s.epoch++
	if s.epoch == 0 {
		clear(s.mark)
		s.epoch = 1
	}
	if h, ok := s.head[b]; ok {
		for i := h; i >= 0; i = s.nodes[i].next {
			if nd := &s.nodes[i]; s.alive(nd, now) {
				s.mark[nd.inst] = s.epoch
			}
		}
	}
	return s.epoch
}

// firstFalse returns the first index in [lo, hi) where ok turns false, or
// hi, assuming ok is monotone (true...true false...false) on [lo, hi). It
// gallops from lo, so the cost is O(log(answer-lo)) calls.
func firstFalse(lo, hi int, ok func(int) bool) int {
	step := 1
	i := lo
	for i < hi && ok(i) {
		lo = i + 1
		i += step
		step *= 2
	}
	hi = min(i, hi)
	// ok(lo-1) is true (or lo is the start), ok(hi) is false (or hi is the end).
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ok(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// longestAny is the longest leading run of blocks held by some instance
// (relies on prefix closure, see metaStore).
func (s *metaStore) longestAny(blocks []uint64, now time.Duration) int {
	return firstFalse(0, len(blocks), func(i int) bool { return s.held(blocks[i], now) })
}

// longest is the longest leading run of blocks held by inst (relies on
// prefix closure).
func (s *metaStore) longest(blocks []uint64, inst int, now time.Duration) int {
	return firstFalse(0, len(blocks), func(i int) bool { return s.holds(blocks[i], inst, now) })
}

// prefixes sets out[i] to the longest leading run of blocks held by
// instance i, for every instance, and returns the maximum. It relies on
// prefix closure: it bisects the positions, splitting the instances at
// each probe into those that hold the probed block and those that do not,
// so it costs O(groups · log n) lookups where groups is the number of
// distinct answers.
func (s *metaStore) prefixes(blocks []uint64, now time.Duration, out []int) int {
	clear(out)
	longest := s.longestAny(blocks, now)
	if longest == 0 {
		return 0
	}
	ep := s.markHolders(blocks[0], now)
	ids := s.ids[:0]
	for i := range s.n {
		if s.mark[i] == ep {
			ids = append(ids, int32(i))
		}
	}
	s.ids = ids
	s.split(blocks, 1, longest, ids, now, out)
	return longest
}

// split assigns out[id] for ids whose answer is known to be in [lo, hi].
func (s *metaStore) split(blocks []uint64, lo, hi int, ids []int32, now time.Duration, out []int) {
	for len(ids) > 0 {
		if lo == hi {
			for _, id := range ids {
				out[id] = lo
			}
			return
		}
		mid := int(uint(lo+hi+1) >> 1) // lo < mid <= hi
		ep := s.markHolders(blocks[mid-1], now)
		// Partition: holders of block mid-1 (answer in [mid, hi]) first.
		k := 0
		for j, id := range ids {
			if s.mark[id] == ep {
				ids[k], ids[j] = ids[j], ids[k]
				k++
			}
		}
		s.split(blocks, mid, hi, ids[:k], now, out)
		ids, hi = ids[k:], mid-1
	}
}

// size is the number of owner nodes in use (live or not yet swept).
func (s *metaStore) size() int { return s.live }

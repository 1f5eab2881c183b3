package gpu

import (
	"math/bits"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// refLRU is BlockLRU's specification: a list of keys, most recent first,
// with every operation spelled out one block at a time.
type refLRU struct {
	capTokens, used int
	keys            []uint64 // most recent first
	tokens          map[uint64]int
	track           bool
	evicted         []uint64
}

func newRefLRU(capTokens int) *refLRU {
	return &refLRU{capTokens: capTokens, tokens: map[uint64]int{}}
}

func (r *refLRU) front(k uint64) {
	i := slices.Index(r.keys, k)
	r.keys = slices.Insert(slices.Delete(r.keys, i, i+1), 0, k)
}

func (r *refLRU) evictOldest() {
	if len(r.keys) == 0 {
		return
	}
	k := r.keys[len(r.keys)-1]
	r.keys = r.keys[:len(r.keys)-1]
	r.used -= r.tokens[k]
	delete(r.tokens, k)
	if r.track {
		r.evicted = append(r.evicted, k)
	}
}

func (r *refLRU) Insert(blocks []uint64, bt int) {
	if r.capTokens <= 0 || bt <= 0 || bt > r.capTokens {
		return
	}
	for k := len(blocks) - 1; k >= 0; k-- {
		b := blocks[k]
		if _, ok := r.tokens[b]; ok {
			r.front(b)
			continue
		}
		for r.used+bt > r.capTokens {
			r.evictOldest()
		}
		r.keys = slices.Insert(r.keys, 0, b)
		r.tokens[b] = bt
		r.used += bt
	}
}

func (r *refLRU) Peek(blocks []uint64) int {
	for k, b := range blocks {
		if _, ok := r.tokens[b]; !ok {
			return k
		}
	}
	return len(blocks)
}

func (r *refLRU) Match(blocks []uint64) int {
	n := r.Peek(blocks)
	for k := n - 1; k >= 0; k-- {
		r.front(blocks[k])
	}
	return n
}

func (r *refLRU) remove(k uint64) {
	if _, ok := r.tokens[k]; !ok {
		return
	}
	i := slices.Index(r.keys, k)
	r.keys = slices.Delete(r.keys, i, i+1)
	r.used -= r.tokens[k]
	delete(r.tokens, k)
}

// order lists c's keys, most recent first, checking the segment list both
// ways, each position's segment id, the hash table (every live block found
// at its position) and the counts.
func (c *BlockLRU) order(t *rapid.T) []uint64 {
	var keys []uint64
	prev := int32(0)
	used := 0
	for s := c.segs[0].next; s != 0; s = c.segs[s].next {
		S := c.segs[s]
		if S.prev != prev {
			t.Fatalf("segment %d: prev %d, want %d", s, S.prev, prev)
		}
		if S.lo >= S.hi || S.lo < c.bot || int(S.hi) > len(c.keys) || S.tokens <= 0 {
			t.Fatalf("segment %d: [%d, %d) of %d-token blocks, arena [%d, %d)", s, S.lo, S.hi, S.tokens, c.bot, len(c.keys))
		}
		for p := S.lo; p < S.hi; p++ {
			if !c.pos.isLive(p) {
				t.Fatalf("position %d in segment %d not marked live", p, s)
			}
			if got := c.segOf(p); got != s {
				t.Fatalf("position %d in segment %d: segOf %d", p, s, got)
			}
			if want := p == S.lo; c.pos.starts[p>>6]&(1<<(p&63)) != 0 != want {
				t.Fatalf("position %d in segment %d [%d, %d): start bit %v", p, s, S.lo, S.hi, !want)
			}
			if got := c.lookup(c.keys[p]); got != p {
				t.Fatalf("position %d (key %d): lookup %d", p, c.keys[p], got)
			}
			keys = append(keys, c.keys[p])
		}
		used += int(S.hi-S.lo) * int(S.tokens)
		prev = s
		if len(keys) > len(c.keys) {
			t.Fatal("LRU list has a cycle")
		}
	}
	if c.segs[0].prev != prev {
		t.Fatalf("sentinel prev %d, want %d", c.segs[0].prev, prev)
	}
	// No other position is live or starts a segment, and the summary of
	// starts is exact.
	live, starts := 0, 0
	for w, x := range c.pos.live {
		live += bits.OnesCount64(x)
		starts += bits.OnesCount64(c.pos.starts[w])
		if got := c.pos.sum[w>>6]&(1<<(w&63)) != 0; got != (c.pos.starts[w] != 0) {
			t.Fatalf("summary bit of word %d is %v, its starts %#x", w, got, c.pos.starts[w])
		}
	}
	segs := 0
	for s := c.segs[0].next; s != 0; s = c.segs[s].next {
		segs++
	}
	if live != len(keys) || starts != segs {
		t.Fatalf("%d live bits and %d start bits for %d blocks in %d segments", live, starts, len(keys), segs)
	}
	if c.live != len(keys) || c.used != used {
		t.Fatalf("live %d, used %d; the list holds %d blocks, %d tokens", c.live, c.used, len(keys), used)
	}
	if c.idx.n*2 > len(c.idx.slots) {
		t.Fatalf("hash table %d of %d slots", c.idx.n, len(c.idx.slots))
	}
	return keys
}

// v1Order lists the per-block reference's keys, most recent first.
func (c *blockLRUv1) v1Order() []uint64 {
	var keys []uint64
	for i := c.nodes[0].next; i != 0; i = c.nodes[i].next {
		keys = append(keys, c.nodes[i].key)
	}
	return keys
}

// TestBlockLRUMatchesReference drives BlockLRU, the per-block cache it
// replaced (blockLRUv1) and refLRU with the same operations — chains of
// sessions that grow, share a system prompt, are re-read in order, out of
// order and with gaps, plus arbitrary small-alphabet lists, removals of
// single blocks and of a session's whole chain, capacity changes — and
// requires the same LRU order, evictions and answers from all three.
func TestBlockLRUMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capTokens := rapid.IntRange(0, 400).Draw(t, "cap")
		c, v, r := NewBlockLRU(capTokens), newBlockLRUv1(capTokens), newRefLRU(capTokens)
		track := rapid.Bool().Draw(t, "track")
		c.trackEvictions, v.trackEvictions, r.track = track, track, track
		sys := rapid.IntRange(0, 5).Draw(t, "sys")
		chain := func(s, n int) []uint64 {
			b := make([]uint64, n)
			for i := range b {
				if i < sys {
					b[i] = 1000 + uint64(i)
				} else {
					b[i] = uint64(s+1)<<20 | uint64(i)
				}
			}
			return b
		}
		draw := func(label string) []uint64 {
			switch rapid.IntRange(0, 4).Draw(t, label+"-kind") {
			case 0: // arbitrary, duplicates likely
				return rapid.SliceOfN(rapid.Uint64Range(0, 20), 0, 12).Draw(t, label+"-any")
			case 1: // a chain with one block changed
				b := chain(rapid.IntRange(0, 4).Draw(t, label+"-s"), rapid.IntRange(1, 30).Draw(t, label+"-n"))
				b[rapid.IntRange(0, len(b)-1).Draw(t, label+"-at")] = rapid.Uint64Range(0, 20).Draw(t, label+"-v")
				return b
			case 2: // a chain's slice (not from its start)
				b := chain(rapid.IntRange(0, 4).Draw(t, label+"-s"), 30)
				i := rapid.IntRange(0, 29).Draw(t, label+"-i")
				return b[i:rapid.IntRange(i, 30).Draw(t, label+"-j")]
			}
			return chain(rapid.IntRange(0, 4).Draw(t, label+"-s"), rapid.IntRange(0, 30).Draw(t, label+"-n"))
		}
		ops := rapid.IntRange(1, 80).Draw(t, "ops")
		for op := 0; op < ops; op++ {
			switch rapid.IntRange(0, 6).Draw(t, "op") {
			case 0, 1, 2:
				b, bt := draw("ins"), rapid.IntRange(0, 30).Draw(t, "bt")
				c.Insert(b, bt)
				v.Insert(b, bt)
				r.Insert(b, bt)
			case 3:
				b := draw("match")
				got, gotV, want := c.Match(b), v.Match(b), r.Match(b)
				if got != want || gotV != want {
					t.Fatalf("Match(%v) = %d (v1 %d), want %d", b, got, gotV, want)
				}
			case 4:
				b := draw("peek")
				got, gotV, want := c.Peek(b), v.Peek(b), r.Peek(b)
				if got != want || gotV != want {
					t.Fatalf("Peek(%v) = %d (v1 %d), want %d", b, got, gotV, want)
				}
			case 5:
				if rapid.Bool().Draw(t, "shrink") {
					// The fused worker's shared pool: the capacity moves.
					capTokens = rapid.IntRange(0, 400).Draw(t, "newcap")
					c.setCap(capTokens)
					v.capTokens, r.capTokens = capTokens, capTokens
					for v.used > v.capTokens {
						v.evictOldest()
					}
					for r.used > r.capTokens {
						r.evictOldest()
					}
				} else {
					k := rapid.Uint64Range(0, 20).Draw(t, "rm")
					if rapid.Bool().Draw(t, "rmChain") {
						k = chain(rapid.IntRange(0, 4).Draw(t, "rms"), 30)[rapid.IntRange(0, 29).Draw(t, "rmi")]
					}
					c.remove(k)
					v.remove(k)
					r.remove(k)
				}
			case 6: // drop a session: remove its chain's blocks, in some order
				b := chain(rapid.IntRange(0, 4).Draw(t, "drop-s"), rapid.IntRange(0, 30).Draw(t, "drop-n"))
				if rapid.Bool().Draw(t, "drop-rev") {
					slices.Reverse(b)
				}
				for _, k := range b {
					c.remove(k)
					v.remove(k)
					r.remove(k)
				}
			}
			if got := c.order(t); !slices.Equal(got, r.keys) {
				t.Fatalf("after op %d: LRU order %v, want %v", op, got, r.keys)
			}
			if got := v.v1Order(); !slices.Equal(got, r.keys) {
				t.Fatalf("after op %d: v1 LRU order %v, want %v", op, got, r.keys)
			}
			if c.Used() != r.used || v.Used() != r.used {
				t.Fatalf("Used = %d (v1 %d), want %d", c.Used(), v.Used(), r.used)
			}
			got, gotV, want := c.takeEvicted(), v.takeEvicted(), r.evicted
			if !slices.Equal(got, want) || !slices.Equal(gotV, want) {
				t.Fatalf("evicted %v (v1 %v), want %v", got, gotV, want)
			}
			r.evicted = nil
		}
	})
}

// TestBlockLRUMatchesV1AtScale is TestBlockLRUMatchesReference at a size
// where the arena compacts and grows many times and evicted chains come
// back (agentic sessions: chains that grow turn by turn, share a system
// prompt, are re-read after their tails were evicted), against the
// per-block cache only (the list reference is quadratic).
func TestBlockLRUMatchesV1AtScale(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capTokens := rapid.IntRange(1, 4000).Draw(t, "cap")
		c, v := NewBlockLRU(capTokens), newBlockLRUv1(capTokens)
		c.trackEvictions, v.trackEvictions = true, true
		sessions := rapid.IntRange(1, 12).Draw(t, "sessions")
		length := make([]int, sessions)
		chain := func(s, n int) []uint64 {
			b := make([]uint64, n)
			for i := range b {
				if i < 8 {
					b[i] = 1 << 40 // the shared system prompt
					b[i] += uint64(i)
				} else {
					b[i] = uint64(s+1)<<20 | uint64(i)
				}
			}
			return b
		}
		ops := rapid.IntRange(1, 300).Draw(t, "ops")
		for op := 0; op < ops; op++ {
			s := rapid.IntRange(0, sessions-1).Draw(t, "s")
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0: // the session restarts
				length[s] = 0
			case 1: // a lookup of a stretch of the chain
				b := chain(s, length[s]+50)
				i := rapid.IntRange(0, len(b)-1).Draw(t, "i")
				if got, want := c.Peek(b[i:]), v.Peek(b[i:]); got != want {
					t.Fatalf("Peek = %d, want %d", got, want)
				}
			case 2: // drop some of the session's blocks
				drop := chain(s, length[s])[rapid.IntRange(0, length[s]).Draw(t, "from"):]
				c.removeAll(drop)
				for _, k := range drop {
					v.remove(k)
				}
			default: // the next turn: match, then insert the grown chain
				length[s] += rapid.IntRange(0, 80).Draw(t, "grow")
				b := chain(s, length[s])
				bt := 16
				if rapid.IntRange(0, 9).Draw(t, "odd-bt") == 0 {
					bt = rapid.IntRange(1, 40).Draw(t, "bt")
				}
				if got, want := c.Match(b), v.Match(b); got != want {
					t.Fatalf("Match = %d, want %d", got, want)
				}
				c.Insert(b, bt)
				v.Insert(b, bt)
			}
			if got, want := c.order(t), v.v1Order(); !slices.Equal(got, want) {
				t.Fatalf("after op %d: LRU order differs (%d vs %d blocks)", op, len(got), len(want))
			}
			if c.Used() != v.Used() {
				t.Fatalf("Used = %d, want %d", c.Used(), v.Used())
			}
			if got, want := c.takeEvicted(), v.takeEvicted(); !slices.Equal(got, want) {
				t.Fatalf("evicted %v, want %v", got, want)
			}
		}
	})
}

func lruChain(s, n int) []uint64 {
	b := make([]uint64, n)
	for i := range b {
		b[i] = (uint64(s+1)<<32 | uint64(i)) * 0x9e3779b97f4a7c15
	}
	return b
}

// lruUnderTest is what BenchmarkBlockLRU drives: the segment cache and
// the per-block one it replaced (the "before").
type lruUnderTest interface {
	Match([]uint64) int
	Insert([]uint64, int)
	evictedSince() []uint64
}

// BenchmarkBlockLRU measures the prefix cache per request, in blocks/s,
// for the segment cache (seg) and the per-block one it replaced (v1):
// "warm" re-reads a session's resident chain (4,096 to 8,128 blocks) and
// inserts it with 64 new blocks (Match then Insert: a fused worker's next
// turn of a session; after 64 turns the session starts over), "thrash"
// inserts 512-block chains of fresh sessions into a full cache (a prefill
// worker's cache at scale, every block a miss and an eviction), "agentic"
// is a dp4 worker of the agentic peer workload: 13 sessions in turn, each
// turn the session's chain grown by 272 blocks (up to 2,848), Match then
// Insert into a 5,756-block cache that holds about two of them, evictions
// tracked (the fused worker's).
func BenchmarkBlockLRU(b *testing.B) {
	impls := []struct {
		name string
		new  func(int) lruUnderTest
	}{
		{"seg", func(c int) lruUnderTest { l := NewBlockLRU(c); l.trackEvictions = true; return l }},
		{"v1", func(c int) lruUnderTest { l := newBlockLRUv1(c); l.trackEvictions = true; return l }},
	}
	const bt = 16
	for _, im := range impls {
		b.Run("warm/4096+64/impl="+im.name, func(b *testing.B) {
			c := im.new(8 * 4096 * bt)
			for s := 1; s < 8; s++ {
				c.Insert(lruChain(s, 4096), bt)
				c.evictedSince()
			}
			full := lruChain(0, 4096+64*64)
			c.Insert(full[:4096], bt)
			b.ReportAllocs()
			n, blocks := 4096, 0
			for b.Loop() {
				if n+64 > len(full) {
					n = 4096
				}
				c.Match(full[:n])
				c.Insert(full[:n+64], bt)
				c.evictedSince()
				blocks += 2*n + 64
				n += 64
			}
			b.ReportMetric(float64(blocks)/b.Elapsed().Seconds(), "blocks/s")
		})
	}
	for _, im := range impls {
		b.Run("thrash/512/impl="+im.name, func(b *testing.B) {
			c := im.new(64 * 512 * bt)
			const sessions = 256
			chains := make([][]uint64, sessions)
			for s := range chains {
				chains[s] = lruChain(s, 512)
			}
			for s := 0; s < 64; s++ {
				c.Insert(chains[s], bt)
				c.evictedSince()
			}
			b.ReportAllocs()
			s := 64
			for b.Loop() {
				c.Insert(chains[s%sessions], bt)
				c.evictedSince()
				s++
			}
			b.ReportMetric(float64(b.N)*512/b.Elapsed().Seconds(), "blocks/s")
		})
	}
	for _, im := range impls {
		b.Run("agentic/impl="+im.name, func(b *testing.B) {
			const sessions, step, turns = 13, 272, 10
			c := im.new(5756 * bt)
			chains := make([][]uint64, sessions)
			for s := range chains {
				chains[s] = lruChain(s, step*(turns+1))
			}
			b.ReportAllocs()
			i, blocks := 0, 0
			for b.Loop() {
				s, t := i%sessions, 1+(i/sessions)%turns
				p := chains[s][:t*step]
				c.Match(p)
				c.Insert(p, bt)
				c.evictedSince()
				blocks += len(p)
				i++
			}
			b.ReportMetric(float64(blocks)/b.Elapsed().Seconds(), "blocks/s")
		})
	}
}

// BenchmarkBlockLRUCompact measures a compaction (the arena rewritten in
// LRU order and the table rebuilt) of a full cache the size of the agentic
// 1P3D prefill worker's (44,861 blocks of 16 tokens, in 512-block chains),
// in place at its final arena size.
func BenchmarkBlockLRUCompact(b *testing.B) {
	const bt, capBlocks = 16, 44861
	c := NewBlockLRU(capBlocks * bt)
	for s := 0; c.evictions == 0 || s < 4*capBlocks/512; s++ {
		c.Insert(lruChain(s, 512), bt)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.compact(1, bt)
	}
	b.ReportMetric(float64(c.live), "blocks")
}

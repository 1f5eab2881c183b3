package bucket

import (
	"slices"
	"testing"
	"time"

	"github.com/pdemu/pdemu/internal/splitmix"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// chain returns n prefix-chained blocks whose i-th block depends on
// choices[0..i] (so chains that agree on their first choices share a
// prefix); missing choices are 0.
func chain(root uint64, n int, choices ...uint64) []uint64 {
	out := make([]uint64, n)
	h := splitmix.Mix64(root + 1)
	for i := range out {
		var c uint64
		if i < len(choices) {
			c = choices[i]
		}
		h = splitmix.Mix64(h ^ splitmix.Mix64(c+uint64(i)*golden))
		out[i] = h
	}
	return out
}

// linearPrefix walks blocks until inst misses one: the reference the
// bisection must agree with.
func linearPrefix(s *metaStore, blocks []uint64, inst int, now time.Duration) int {
	for i, b := range blocks {
		if !s.holds(b, inst, now) {
			return i
		}
	}
	return len(blocks)
}

func TestMetaStoreRecordEvict(t *testing.T) {
	s := newMetaStore(3, 0)
	a := chain(1, 10)
	s.record(0, a, 0)
	s.record(1, a[:4], 0)
	out := make([]int, 3)
	assert.Equal(t, 10, s.prefixes(a, 0, out))
	assert.Equal(t, []int{10, 4, 0}, out)
	assert.Equal(t, 10, s.longestAny(a, 0))
	assert.Equal(t, 14, s.size())

	s.evict(0, a[6:])
	assert.Equal(t, 6, s.prefixes(a, 0, out))
	assert.Equal(t, []int{6, 4, 0}, out)
	s.evict(0, a) // blocks it no longer holds are ignored
	s.evict(2, a) // an instance that never held them too
	assert.Equal(t, []int{0, 4, 0}, func() []int { s.prefixes(a, 0, out); return out }())
	s.evict(1, a[:4])
	assert.Equal(t, 0, s.size())
	assert.Empty(t, s.head, "blocks without owners are deleted")
	assert.Equal(t, 0, s.prefixes(a, 0, out))
	assert.Equal(t, 0, s.prefixes(nil, 0, out))
}

func TestMetaStoreTTL(t *testing.T) {
	const ttl = 10 * time.Second
	s := newMetaStore(2, ttl)
	a := chain(1, 8)
	s.record(0, a, 0)
	s.record(1, a[:3], 5*time.Second)
	out := make([]int, 2)
	s.prefixes(a, 9*time.Second, out)
	assert.Equal(t, []int{8, 3}, out)
	// At exactly the TTL an entry is expired.
	s.prefixes(a, ttl, out)
	assert.Equal(t, []int{0, 3}, out)
	assert.Equal(t, 3, s.longestAny(a, ttl))
	s.prefixes(a, 15*time.Second, out)
	assert.Equal(t, []int{0, 0}, out)

	// A new record refreshes the blocks it names only.
	s.record(0, a[:2], 20*time.Second)
	s.prefixes(a, 21*time.Second, out)
	assert.Equal(t, []int{2, 0}, out)
}

func TestMetaStoreSweepBoundsMemory(t *testing.T) {
	const ttl = time.Second
	s := newMetaStore(4, ttl)
	for i := range 2000 {
		now := time.Duration(i) * 100 * time.Millisecond
		s.record(i%4, chain(uint64(i), 64), now)
	}
	// 10 live requests' worth of blocks at most, plus what a sweep has not
	// reached yet (it runs once as many blocks were recorded as the map holds).
	assert.LessOrEqual(t, s.size(), 3*11*64)
	assert.LessOrEqual(t, len(s.head), 3*11*64)
	// Nodes are reused rather than grown.
	assert.LessOrEqual(t, len(s.nodes), 4*11*64)
}

func TestFirstFalse(t *testing.T) {
	for n := range 40 {
		for cut := 0; cut <= n; cut++ {
			calls := 0
			got := firstFalse(0, n, func(i int) bool { calls++; return i < cut })
			require.Equal(t, cut, got, "n=%d cut=%d", n, cut)
			require.LessOrEqual(t, calls, 2*bitsLen(cut+1)+2, "n=%d cut=%d", n, cut)
		}
	}
}

func bitsLen(x int) int {
	n := 0
	for ; x > 0; x >>= 1 {
		n++
	}
	return n
}

// model is the reference meta-store: per instance, block → last seen.
type model struct {
	held   []map[uint64]time.Duration
	parent map[uint64]uint64 // block → its predecessor (0 for a first block)
	ttl    time.Duration
}

func (m *model) live(inst int, b uint64, now time.Duration) bool {
	seen, ok := m.held[inst][b]
	return ok && (m.ttl <= 0 || now-seen < m.ttl)
}

// hasLiveChild reports whether inst holds a live block whose predecessor is b.
func (m *model) hasLiveChild(inst int, b uint64, now time.Duration) bool {
	for c := range m.held[inst] {
		if m.parent[c] == b && m.live(inst, c, now) {
			return true
		}
	}
	return false
}

// TestMetaStoreBisectionMatchesLinear: under any sequence of records,
// tail-first evictions (as gpu.BlockLRU evicts) and expiry, the bisecting
// lookups agree with a block-by-block walk of a reference model.
func TestMetaStoreBisectionMatchesLinear(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(t, "instances")
		ttl := time.Duration(rapid.SampledFrom([]int{0, 3, 10}).Draw(t, "ttl")) * time.Second
		s := newMetaStore(n, ttl)
		m := &model{parent: map[uint64]uint64{}, ttl: ttl}
		for range n {
			m.held = append(m.held, map[uint64]time.Duration{})
		}
		gen := func(t *rapid.T, label string) []uint64 {
			choices := rapid.SliceOfN(rapid.Uint64Range(0, 2), 0, 12).Draw(t, label+"-choices")
			b := chain(rapid.Uint64Range(0, 1).Draw(t, label+"-root"), rapid.IntRange(0, 24).Draw(t, label+"-len"), choices...)
			for i, x := range b {
				if i > 0 {
					m.parent[x] = b[i-1]
				} else {
					m.parent[x] = 0
				}
			}
			return b
		}
		var now time.Duration
		out := make([]int, n)
		for step := range rapid.IntRange(1, 60).Draw(t, "steps") {
			now += time.Duration(rapid.IntRange(0, 2).Draw(t, "dt")) * time.Second
			inst := rapid.IntRange(0, n-1).Draw(t, "inst")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0, 1:
				b := gen(t, "rec")
				s.record(inst, b, now)
				for _, x := range b {
					m.held[inst][x] = max(m.held[inst][x], now)
				}
			case 2:
				// Evict a tail of a chain, leaves first, stopping at a
				// block that still has a live child.
				b := gen(t, "ev")
				from := rapid.IntRange(0, len(b)).Draw(t, "from")
				var gone []uint64
				for k := len(b) - 1; k >= from; k-- {
					if _, ok := m.held[inst][b[k]]; !ok {
						continue
					}
					if m.hasLiveChild(inst, b[k], now) {
						break
					}
					delete(m.held[inst], b[k])
					gone = append(gone, b[k])
				}
				s.evict(inst, gone)
			}
			q := gen(t, "query")
			longest := s.prefixes(q, now, out)
			want := 0
			for i := range n {
				ref := 0
				for ref < len(q) && m.live(i, q[ref], now) {
					ref++
				}
				if out[i] != ref {
					t.Fatalf("step %d: instance %d: bisection %d, reference %d", step, i, out[i], ref)
				}
				if got := s.longest(q, i, now); got != ref {
					t.Fatalf("step %d: instance %d: longest %d, reference %d", step, i, got, ref)
				}
				if got := linearPrefix(s, q, i, now); got != ref {
					t.Fatalf("step %d: instance %d: store walk %d, reference %d", step, i, got, ref)
				}
				want = max(want, ref)
			}
			if longest != want || s.longestAny(q, now) != want {
				t.Fatalf("step %d: longest %d / %d, reference %d", step, longest, s.longestAny(q, now), want)
			}
		}
	})
}

// TestMetaStoreRecordHintedMatchesRecord: recordHinted, fed the nodes it
// returned for the session's previous record on the instance (or, at
// times, arbitrary garbage), leaves every owner set and last-seen time as
// record does: the stores answer every lookup alike, under records,
// evictions and expiry.
func TestMetaStoreRecordHintedMatchesRecord(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "instances")
		ttl := time.Duration(rapid.SampledFrom([]int{3, 10}).Draw(t, "ttl")) * time.Second
		plain, hinted := newMetaStore(n, ttl), newMetaStore(n, ttl)
		hints := map[[2]int][]int32{}
		// Sessions grow their chains turn by turn (one backing array each,
		// as the generator does); other records are arbitrary chains.
		const sessions = 3
		grown := make([]int, sessions)
		full := make([][]uint64, sessions)
		for s := range full {
			full[s] = chain(uint64(s%2), 40, uint64(s), 1, 2, 0, 1)
		}
		var universe []uint64
		for _, f := range full {
			universe = append(universe, f...)
		}
		var now time.Duration
		out1, out2 := make([]int, n), make([]int, n)
		for step := range rapid.IntRange(1, 80).Draw(t, "steps") {
			now += time.Duration(rapid.IntRange(0, 3).Draw(t, "dt")) * time.Second
			inst := rapid.IntRange(0, n-1).Draw(t, "inst")
			s := rapid.IntRange(0, sessions-1).Draw(t, "s")
			var blocks []uint64
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0, 1: // the session's next turn
				grown[s] = min(40, grown[s]+rapid.IntRange(0, 8).Draw(t, "grow"))
				blocks = full[s][:grown[s]]
			case 2: // a prefix only, or another chain under the session's name
				if rapid.Bool().Draw(t, "other") {
					blocks = chain(rapid.Uint64Range(0, 1).Draw(t, "root"), rapid.IntRange(0, 20).Draw(t, "len"), rapid.Uint64Range(0, 2).Draw(t, "c"))
					universe = append(universe, blocks...)
				} else {
					blocks = full[s][:rapid.IntRange(0, 40).Draw(t, "pre")]
				}
			case 3: // evict a tail
				b := full[rapid.IntRange(0, sessions-1).Draw(t, "es")]
				from := rapid.IntRange(0, len(b)).Draw(t, "from")
				plain.evict(inst, b[from:])
				hinted.evict(inst, b[from:])
			case 4: // garbage hints
				h := rapid.SliceOfN(rapid.Int32Range(-2, int32(len(hinted.nodes))+2), 0, 50).Draw(t, "garbage")
				hints[[2]int{inst, s}] = h
				blocks = full[s][:grown[s]]
			}
			if blocks != nil {
				plain.record(inst, blocks, now)
				k := [2]int{inst, s}
				hints[k] = hinted.recordHinted(inst, blocks, now, hints[k])
				if got := hints[k]; len(got) != len(blocks) {
					t.Fatalf("step %d: %d hint nodes for %d blocks", step, len(got), len(blocks))
				}
			}
			q := now + time.Duration(rapid.IntRange(0, 4).Draw(t, "ahead"))*time.Second
			for _, b := range universe {
				if plain.held(b, q) != hinted.held(b, q) {
					t.Fatalf("step %d: held(%x) differs", step, b)
				}
				for i := range n {
					if plain.holds(b, i, q) != hinted.holds(b, i, q) {
						t.Fatalf("step %d: holds(%x, %d) differs", step, b, i)
					}
				}
			}
			for _, f := range full {
				l1, l2 := plain.prefixes(f, q, out1), hinted.prefixes(f, q, out2)
				if l1 != l2 || !slices.Equal(out1, out2) {
					t.Fatalf("step %d: prefixes %d %v, hinted %d %v", step, l1, out1, l2, out2)
				}
			}
		}
	})
}

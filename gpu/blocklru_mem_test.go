package gpu

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// footprint is the bytes c's arrays hold (their capacities).
func (c *BlockLRU) footprint() int {
	return cap(c.keys)*8 + cap(c.at)*int(unsafe.Sizeof(posMeta{})) + (cap(c.pos.live)+cap(c.pos.starts)+cap(c.pos.sum))*8 + cap(c.idx.slots)*int(unsafe.Sizeof(pmSlot{})) +
		(cap(c.segs)+cap(c.runs))*int(unsafe.Sizeof(lruSeg{})) + cap(c.freeSegs)*4 + cap(c.evicted)*8
}

func pow2ceil(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// churn sends 40 cache-fulls of chains of chainLen blocks through c: fresh
// chains, and now and then an old one come back (revived); after, if not
// nil, runs after each chain.
func churn(c *BlockLRU, capBlocks, chainLen, bt int, after func()) {
	for s := range 40 * capBlocks / chainLen {
		ch := lruChain(s, chainLen)
		if s%3 == 2 {
			ch = lruChain(s-2, chainLen)
		}
		c.Match(ch)
		c.Insert(ch, bt)
		if after != nil {
			after()
		}
	}
}

// bitmapBytes is the size of the live and start bitmaps and the summary
// of an arena of size positions.
func bitmapBytes(size int) int { return size/4 + 8*((size/64+63)/64) }

// The cache's memory is bounded by its capacity, however many blocks go
// through it: an arena of the smallest power of two ≥ ghostCacheFulls
// cache-fulls of positions, 32 bytes and 2 bits each (key, the id of a
// segment starting there and a hint, two table slots; live and start
// bits), held once (no spare arena or table), and at most a segment per
// live block (its capacity within 3× of that: append rounds up).
func TestBlockLRUMemoryBoundedByCapacity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capBlocks := rapid.IntRange(64, 2000).Draw(t, "capBlocks")
		chainLen := rapid.IntRange(1, capBlocks/8).Draw(t, "chain")
		const bt = 16
		c := NewBlockLRU(capBlocks * bt)
		c.trackEvictions = true
		peakSegs := 0
		churn(c, capBlocks, chainLen, bt, func() {
			c.evictedSince()
			peakSegs = max(peakSegs, len(c.segs))
		})
		size := pow2ceil(ghostCacheFulls * capBlocks)
		if len(c.keys) > size {
			t.Fatalf("arena of %d positions, want at most %d (cache of %d blocks)", len(c.keys), size, capBlocks)
		}
		bound := 32*size + bitmapBytes(size) + (cap(c.segs)+cap(c.runs))*int(unsafe.Sizeof(lruSeg{})) + cap(c.freeSegs)*4 + cap(c.evicted)*8
		if got := c.footprint(); got > bound {
			t.Fatalf("footprint %d B, want at most %d B", got, bound)
		}
		if cap(c.segs) > 3*(capBlocks+2) {
			t.Fatalf("segment list of capacity %d for a cache of %d blocks", cap(c.segs), capBlocks)
		}
	})
}

// A compaction that keeps the arena's size allocates nothing (the live
// keys are parked in the table's slots, not in a scratch arena).
func TestBlockLRUCompactInPlaceAllocatesNothing(t *testing.T) {
	const capBlocks, bt, chainLen = 1000, 16, 100
	c := NewBlockLRU(capBlocks * bt)
	s := 0
	step := func() {
		ch := lruChain(s, chainLen)
		c.Match(ch)
		c.Insert(ch, bt)
		s++
	}
	for range 200 { // the arena has grown to its final size
		step()
	}
	size := len(c.keys)
	require.Equal(t, pow2ceil(ghostCacheFulls*capBlocks), size)
	before := c.bot
	compactions := 0
	allocs := testing.AllocsPerRun(400, func() {
		b := c.bot
		step()
		if c.bot > b {
			compactions++
		}
	})
	assert.Zero(t, allocs)
	assert.GreaterOrEqual(t, compactions, 5, "the runs compacted (bot was %d)", before)
	assert.Equal(t, size, len(c.keys))
}

// The same bound on the heap the cache holds, measured (a prefill
// worker's cache of the default scenario holds ~30k blocks).
func TestBlockLRUHeapBoundedByCapacity(t *testing.T) {
	const capBlocks, bt, chainLen = 30000, 24, 300
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	c := NewBlockLRU(capBlocks * bt)
	churn(c, capBlocks, chainLen, bt, nil)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	held := int64(ms.HeapAlloc) - int64(before)
	size := pow2ceil(ghostCacheFulls * capBlocks)
	bound := int64(32*size + bitmapBytes(size) + 2*(capBlocks+2)*int(unsafe.Sizeof(lruSeg{})) + 256<<10)
	t.Logf("cache of %d blocks: %d KiB held, footprint %d KiB, bound %d KiB", capBlocks, held>>10, c.footprint()>>10, bound>>10)
	assert.LessOrEqual(t, held, bound)
	runtime.KeepAlive(c)
}

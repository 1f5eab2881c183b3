// BlockLRU's per-position bits (see blocklru.go for the structure): which
// arena positions hold a live block, and which start a segment.

package gpu

import "math/bits"

// posBits are two bitmaps over the arena's positions: live (the position
// holds a cached block) and starts (it is the lowest position of a
// segment), with a summary of starts (bit w%64 of sum[w/64]: starts[w] is
// not zero) so that the start at or below a position is found in O(1)
// words however long its segment is (a compaction merges the cache into
// a few long segments).
type posBits struct {
	live, starts, sum []uint64
}

// init clears the bitmaps for an arena of size positions (a power of two
// ≥ 64), reusing their arrays when the size is the same.
func (b *posBits) init(size int) {
	w := size / 64
	if len(b.live) == w {
		clear(b.live)
		clear(b.starts)
		clear(b.sum)
		return
	}
	b.live, b.starts, b.sum = make([]uint64, w), make([]uint64, w), make([]uint64, (w+63)/64)
}

func (b *posBits) isLive(p int32) bool { return b.live[p>>6]&(1<<(uint(p)&63)) != 0 }

// setLive marks positions [lo, hi) live, clearLive dead.
func (b *posBits) setLive(lo, hi int32) {
	if lo >= hi {
		return
	}
	w0, w1, first, last := rangeMasks(lo, hi)
	if w0 == w1 {
		b.live[w0] |= first & last
		return
	}
	b.live[w0] |= first
	for w := w0 + 1; w < w1; w++ {
		b.live[w] = ^uint64(0)
	}
	b.live[w1] |= last
}

func (b *posBits) clearLive(lo, hi int32) {
	if lo >= hi {
		return
	}
	w0, w1, first, last := rangeMasks(lo, hi)
	if w0 == w1 {
		b.live[w0] &^= first & last
		return
	}
	b.live[w0] &^= first
	clear(b.live[w0+1 : w1])
	b.live[w1] &^= last
}

// rangeMasks are the words of positions [lo, hi) (lo < hi), first to
// last, and the masks of its bits in those two words.
func rangeMasks(lo, hi int32) (w0, w1 int32, first, last uint64) {
	return lo >> 6, (hi - 1) >> 6, ^uint64(0) << (uint(lo) & 63), ^uint64(0) >> (63 - (uint(hi-1) & 63))
}

// highestLive is the highest live position in [lo, hi), or -1.
func (b *posBits) highestLive(lo, hi int32) int32 {
	if lo >= hi {
		return -1
	}
	w0 := lo >> 6
	w := (hi - 1) >> 6
	x := b.live[w] & (^uint64(0) >> (63 - (uint(hi-1) & 63)))
	for {
		if w == w0 {
			x &= ^uint64(0) << (uint(lo) & 63)
		}
		if x != 0 {
			return w<<6 + 63 - int32(bits.LeadingZeros64(x))
		}
		if w == w0 {
			return -1
		}
		w--
		x = b.live[w]
	}
}

func (b *posBits) setStart(p int32) {
	w := p >> 6
	b.starts[w] |= 1 << (uint(p) & 63)
	b.sum[w>>6] |= 1 << (uint(w) & 63)
}

func (b *posBits) clearStart(p int32) {
	w := p >> 6
	b.starts[w] &^= 1 << (uint(p) & 63)
	if b.starts[w] == 0 {
		b.sum[w>>6] &^= 1 << (uint(w) & 63)
	}
}

// startAtOrBelow is the highest segment start ≤ p; there must be one (p
// live: its segment's start).
func (b *posBits) startAtOrBelow(p int32) int32 {
	w := p >> 6
	if x := b.starts[w] << (63 - (uint(p) & 63)); x != 0 {
		return p - int32(bits.LeadingZeros64(x))
	}
	// The highest word below w with a start, by the summary.
	g := w >> 6
	x := b.sum[g] & (1<<(uint(w)&63) - 1)
	for x == 0 {
		g--
		x = b.sum[g]
	}
	w = g<<6 + 63 - int32(bits.LeadingZeros64(x))
	return w<<6 + 63 - int32(bits.LeadingZeros64(b.starts[w]))
}

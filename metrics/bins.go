package metrics

import (
	"maps"
	"math/bits"
	"slices"
)

// binChunk is how many consecutive bins one chunk of a bins holds.
const binChunk = 64

// bins is a sparse array of per-second counters: chunks of binChunk
// bins, allocated only where something was counted, so its memory is
// bounded by the number of distinct seconds counted (the work), never by
// the emulated span (a trace whose two records are 95 years apart needs
// two chunks, not 3e9 counters). The zero value is empty.
//
// A chunk is itself sparse: a bitmap of the bins counted and their
// values in bin order, so a chunk with a few bins counted (a router's
// events: some seconds in ten) costs those bins, not binChunk of them.
//
// A bounded bins (bound: a server's, which runs for ever) keeps at most
// maxChunks chunks: past them its resolution doubles (a bin then counts
// res seconds, merged by merge), so its memory is bounded however long
// it runs and a reader summing windows of a multiple of Resolution
// seconds reads what it would read without the bound.
type bins[T any] struct {
	chunks    map[int64]*binsChunk[T]
	n         int64 // 1 + the last second counted (0: none)
	res       int64 // seconds per bin (0: 1)
	maxChunks int
	merge     func(dst, src *T)
}

// binsChunk is binChunk bins: mask has bit j set when bin j was counted
// (at), vals holds those bins in bin order.
type binsChunk[T any] struct {
	mask uint64
	vals []T
}

// get returns bin j, creating it (zero) if it was never counted.
func (c *binsChunk[T]) get(j int) *T {
	bit := uint64(1) << j
	idx := bits.OnesCount64(c.mask & (bit - 1))
	if c.mask&bit == 0 {
		var zero T
		c.vals = slices.Insert(c.vals, idx, zero)
		c.mask |= bit
	}
	return &c.vals[idx]
}

// bound sets the chunk bound and the merge of two bins (maxChunks ≥ 2).
func (b *bins[T]) bound(maxChunks int, merge func(dst, src *T)) {
	b.maxChunks, b.merge = max(maxChunks, 2), merge
}

// resolution is the seconds per bin (1 unless bounded and coarsened).
func (b *bins[T]) resolution() int64 { return max(b.res, 1) }

// last is the last second counted (-1: none).
func (b *bins[T]) last() int64 { return b.n - 1 }

// at returns the counter of second i (i ≥ 0: of its bin), creating its
// chunk.
func (b *bins[T]) at(i int64) *T {
	if b.chunks == nil {
		b.chunks = map[int64]*binsChunk[T]{}
	}
	b.n = max(b.n, i+1)
	k := i / b.resolution()
	c := b.chunks[k/binChunk]
	if c == nil {
		c = new(binsChunk[T])
		b.chunks[k/binChunk] = c
		if b.maxChunks > 0 && len(b.chunks) > b.maxChunks {
			for len(b.chunks) > b.maxChunks {
				b.coarsen()
			}
			return b.at(i)
		}
	}
	return c.get(int(k % binChunk))
}

// coarsen doubles the resolution, merging pairs of bins.
func (b *bins[T]) coarsen() {
	old := b.chunks
	b.res = b.resolution() * 2
	b.chunks = make(map[int64]*binsChunk[T], len(old)/2+1)
	for ck, c := range old {
		idx := 0
		for j := range binChunk {
			if c.mask&(1<<j) == 0 {
				continue
			}
			k := (ck*binChunk + int64(j)) / 2
			nc := b.chunks[k/binChunk]
			if nc == nil {
				nc = new(binsChunk[T])
				b.chunks[k/binChunk] = nc
			}
			b.merge(nc.get(int(k%binChunk)), &c.vals[idx])
			idx++
		}
	}
}

// each calls f for every bin of every allocated chunk, in ascending
// order, with the bin's first second, up to last (bins of a chunk never
// counted are zero).
func (b *bins[T]) each(f func(i int64, v *T)) {
	keys := slices.Sorted(maps.Keys(b.chunks))
	res := b.resolution()
	var zero, z T // a bin never counted reads as zero (z: f may write it)
	for _, k := range keys {
		c := b.chunks[k]
		idx := 0
		for j := range binChunk {
			i := (k*binChunk + int64(j)) * res
			if i >= b.n {
				return
			}
			if c.mask&(1<<j) == 0 {
				z = zero
				f(i, &z)
				continue
			}
			f(i, &c.vals[idx])
			idx++
		}
	}
}

// clone returns a deep copy.
func (b *bins[T]) clone() bins[T] {
	out := bins[T]{n: b.n, res: b.res, maxChunks: b.maxChunks, merge: b.merge}
	if b.chunks != nil {
		out.chunks = make(map[int64]*binsChunk[T], len(b.chunks))
		for k, c := range b.chunks {
			out.chunks[k] = &binsChunk[T]{mask: c.mask, vals: slices.Clone(c.vals)}
		}
	}
	return out
}

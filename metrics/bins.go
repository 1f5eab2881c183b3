package metrics

import "slices"

// binChunk is how many consecutive seconds one chunk of a bins holds.
const binChunk = 64

// bins is a sparse array of per-second counters: chunks of binChunk
// seconds, allocated only where something was counted, so its memory is
// bounded by the number of distinct seconds counted (the work), never by
// the emulated span (a trace whose two records are 95 years apart needs
// two chunks, not 3e9 counters). The zero value is empty.
type bins[T any] struct {
	chunks map[int64]*[binChunk]T
	n      int64 // 1 + the last second counted (0: none)
}

// last is the last second counted (-1: none).
func (b *bins[T]) last() int64 { return b.n - 1 }

// at returns second i's counter (i ≥ 0), creating its chunk.
func (b *bins[T]) at(i int64) *T {
	if b.chunks == nil {
		b.chunks = map[int64]*[binChunk]T{}
	}
	c := b.chunks[i/binChunk]
	if c == nil {
		c = new([binChunk]T)
		b.chunks[i/binChunk] = c
	}
	b.n = max(b.n, i+1)
	return &c[i%binChunk]
}

// each calls f for every second of every allocated chunk, in ascending
// order, up to last (seconds of a chunk never counted are zero).
func (b *bins[T]) each(f func(i int64, v *T)) {
	keys := make([]int64, 0, len(b.chunks))
	for k := range b.chunks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c := b.chunks[k]
		for j := range c {
			i := k*binChunk + int64(j)
			if i >= b.n {
				return
			}
			f(i, &c[j])
		}
	}
}

// clone returns a deep copy.
func (b *bins[T]) clone() bins[T] {
	out := bins[T]{n: b.n}
	if b.chunks != nil {
		out.chunks = make(map[int64]*[binChunk]T, len(b.chunks))
		for k, c := range b.chunks {
			cc := *c
			out.chunks[k] = &cc
		}
	}
	return out
}

package metrics

import (
	"encoding/binary"
	"time"

	"github.com/pdemu/pdemu/internal/varint"
)

// durs is an append-only list of durations stored as varints (zig-zag)
// in fixed-size chunks: a few bytes per value (a millisecond-scale value
// takes 4, a zero 1) and no doubling slack.
type durs struct {
	chunks [][]byte
	n      int
}

const dursChunk = 64 << 10

func (d *durs) add(x time.Duration) {
	if len(d.chunks) == 0 || len(d.chunks[len(d.chunks)-1])+binary.MaxVarintLen64 > dursChunk {
		d.chunks = append(d.chunks, make([]byte, 0, dursChunk))
	}
	c := &d.chunks[len(d.chunks)-1]
	*c = binary.AppendVarint(*c, int64(x))
	d.n++
}

func (d *durs) len() int { return d.n }

// slice returns the values, in the order added.
func (d *durs) slice() []time.Duration { return d.appendTo(make([]time.Duration, 0, d.n)) }

// appendTo appends the values, in the order added, to out.
func (d *durs) appendTo(out []time.Duration) []time.Duration {
	it := d.iter()
	for range d.n {
		out = append(out, it.next())
	}
	return out
}

func (d *durs) iter() dursIter { return dursIter{d: d} }

// dursIter reads a durs in order.
type dursIter struct {
	d   *durs
	c   int
	off int
}

func (it *dursIter) next() time.Duration {
	b := it.d.chunks[it.c]
	if it.off >= len(b) {
		it.c, it.off = it.c+1, 0
		b = it.d.chunks[it.c]
	}
	v, k := varint.Varint(b[it.off:])
	it.off += k
	return time.Duration(v)
}

package metrics

import (
	"encoding/binary"
	"time"

	"github.com/pdemu/pdemu/internal/varint"
)

// partsList is the seven TTFT parts of each completed request, in the
// order tallied, compact: a byte whose bits 0-6 say which parts are
// non-zero, then a zig-zag varint of each non-zero part, in fixed-size
// chunks. When the parts add up to the request's TTFT (they do for every
// request a cluster records) bit 7 is set and the last non-zero part is
// left out: the reader computes it from the TTFT (Tally.ttft, the same
// order). On the 1M-request 1P3D run that is about 2.5 bytes a request
// where seven varint lists took 10.7.
type partsList struct {
	chunks [][]byte
	n      int
}

const (
	partsChunk   = 64 << 10
	partsRowMax  = 1 + 7*binary.MaxVarintLen64
	partsDerived = 1 << 7
)

func (l *partsList) add(ttft time.Duration, p *[7]time.Duration) {
	if len(l.chunks) == 0 || len(l.chunks[len(l.chunks)-1])+partsRowMax > partsChunk {
		l.chunks = append(l.chunks, make([]byte, 0, partsChunk))
	}
	mask, hi := byte(0), -1
	var sum time.Duration // wraps like the reader's subtraction: exact either way
	for k, d := range p {
		sum += d
		if d != 0 {
			mask |= 1 << k
			hi = k
		}
	}
	derived := hi >= 0 && sum == ttft
	if derived {
		mask |= partsDerived
	}
	c := &l.chunks[len(l.chunks)-1]
	*c = append(*c, mask)
	for k, d := range p {
		if d != 0 && !(derived && k == hi) {
			*c = binary.AppendVarint(*c, int64(d))
		}
	}
	l.n++
}

func (l *partsList) iter() partsIter { return partsIter{l: l} }

// partsIter reads a partsList in order.
type partsIter struct {
	l   *partsList
	c   int
	off int
}

// next returns the next request's parts; ttft is its TTFT.
func (it *partsIter) next(ttft time.Duration) (p [7]time.Duration) {
	b := it.l.chunks[it.c]
	if it.off >= len(b) {
		it.c, it.off = it.c+1, 0
		b = it.l.chunks[it.c]
	}
	mask := b[it.off]
	it.off++
	hi := -1
	var sum time.Duration
	for k := range p {
		if mask&(1<<k) == 0 {
			continue
		}
		hi = k
		if mask&partsDerived != 0 && (mask&0x7f)>>(k+1) == 0 { // the last non-zero part: derived
			break
		}
		v, n := varint.Varint(b[it.off:])
		it.off += n
		p[k] = time.Duration(v)
		sum += p[k]
	}
	if mask&partsDerived != 0 {
		p[hi] = ttft - sum
	}
	return p
}

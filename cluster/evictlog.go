package cluster

import (
	"encoding/binary"
	"time"

	"github.com/pdemu/pdemu/internal/varint"

	"github.com/pdemu/pdemu/metrics"
)

// evictLog is a decode node's evictions.csv rows, kept compactly until
// the run's end (Cluster.Evictions): a row's session name is a string
// header in fixed-size chunks (the name itself is the request's, shared),
// and its time (as the difference from the previous row's), tokens,
// cause (an index into the few distinct causes seen) and request are
// zig-zag varints in fixed-size byte chunks: some 28 bytes a row instead
// of a 72-byte metrics.EvictionRow in a doubling slice (the 1M-request
// 1P3D run's ~100k rows held 7.8 MB of its live heap that way). The rows
// read back (cursor) are exactly those added, Worker empty (the node's
// name is applied when the nodes' rows are merged).
type evictLog struct {
	names  [][]string // session names, evictNameChunk a chunk
	data   [][]byte   // the varints, evictDataChunk bytes a chunk at most
	causes []string   // distinct causes, in the order first seen
	n      int
	prevAt time.Duration
	// unsorted: some row's time is before the previous row's (the merge
	// then sorts, as it does a plain slice that is not in time order).
	unsorted bool
}

const (
	evictNameChunk = 1 << 10
	evictDataChunk = 16 << 10
	evictRowMax    = 4 * binary.MaxVarintLen64 // a row's varints, at most
)

func (l *evictLog) add(r metrics.EvictionRow) {
	if l.n%evictNameChunk == 0 {
		l.names = append(l.names, make([]string, 0, evictNameChunk))
	}
	l.names[len(l.names)-1] = append(l.names[len(l.names)-1], r.Session)
	if len(l.data) == 0 || len(l.data[len(l.data)-1])+evictRowMax > evictDataChunk {
		l.data = append(l.data, make([]byte, 0, evictDataChunk))
	}
	ci := len(l.causes)
	for i, c := range l.causes {
		if c == r.Cause {
			ci = i
			break
		}
	}
	if ci == len(l.causes) {
		l.causes = append(l.causes, r.Cause)
	}
	if l.n > 0 && r.At < l.prevAt {
		l.unsorted = true
	}
	b := &l.data[len(l.data)-1]
	*b = binary.AppendVarint(*b, int64(r.At-l.prevAt)) // wraps for extreme values; the cursor undoes it exactly
	*b = binary.AppendVarint(*b, int64(r.Tokens))
	*b = binary.AppendUvarint(*b, uint64(ci))
	*b = binary.AppendVarint(*b, r.For)
	l.prevAt = r.At
	l.n++
}

func (l *evictLog) len() int {
	if l == nil {
		return 0
	}
	return l.n
}

// cursor reads the rows in the order added.
func (l *evictLog) cursor() evictCursor { return evictCursor{l: l} }

type evictCursor struct {
	l      *evictLog
	i      int // rows read
	c, off int // data chunk and offset
	at     time.Duration
}

func (c *evictCursor) next() (metrics.EvictionRow, bool) {
	l := c.l
	if l == nil || c.i >= l.n {
		return metrics.EvictionRow{}, false
	}
	b := l.data[c.c]
	if c.off >= len(b) {
		c.c, c.off = c.c+1, 0
		b = l.data[c.c]
	}
	v := func() int64 {
		x, k := varint.Varint(b[c.off:])
		c.off += k
		return x
	}
	c.at += time.Duration(v())
	tokens := v()
	ci, k := varint.Uvarint(b[c.off:])
	c.off += k
	r := metrics.EvictionRow{At: c.at, Session: l.names[c.i/evictNameChunk][c.i%evictNameChunk],
		Tokens: int(tokens), Cause: l.causes[ci], For: v()}
	c.i++
	return r, true
}

package metrics

import (
	"encoding/binary"
	"math"
	"sort"
	"time"

	"github.com/pdemu/pdemu/internal/varint"
)

// Series is a worker's step-function time series: it stores only change
// points and is resampled at a fixed interval on output. Observe's times
// never decrease (a worker observes itself at its own now).
//
// With a grid (SetGrid), it keeps only the change points that are in
// force at some multiple of the grid interval (the sample times of
// instances.csv, and of any widened interval, a multiple of it): a point
// superseded before the next sample time is overwritten. Memory is then
// bounded by the run's sample times, not by its events, and At at every
// sample time and Max are what they would be without the grid.
//
// The points are stored compactly (about 8 to 12 bytes a point instead
// of a 32-byte Sample in a doubling slice): every point but the last, which
// Observe may still overwrite, is frozen into fixed-size chunks of
// zig-zag varint deltas (time, KV, queue, running) from the point before
// it in its chunk; a chunk's first point is its own base. At finds the
// chunk by binary search and decodes it; WriteInstances reads the points
// once, in order, with a cursor.
type Series struct {
	Worker string
	Kind   string
	Bucket string // bucketed deployments: the worker's bucket

	frozen  ptChunks
	last    Sample // the newest point (valid when hasLast)
	hasLast bool
	grid    time.Duration // 0: keep every change point
	maxOut  int           // the largest KV of the points a grid dropped
	maxPts  int           // > 0: coarsen the grid past this many points (SetMaxPoints)
}

// NewSeries returns an empty series.
func NewSeries(worker, kind string) *Series { return &Series{Worker: worker, Kind: kind} }

// SetGrid makes the series keep only the points in force at multiples of
// iv (iv > 0; see Series). Call it before the first Observe.
func (s *Series) SetGrid(iv time.Duration) { s.grid = iv }

// Observe records the state at t if it changed.
func (s *Series) Observe(t time.Duration, kv, queue, running int) {
	if s.hasLast {
		last := &s.last
		if last.KV == kv && last.Queue == queue && last.Running == running {
			return
		}
		if last.T == t {
			last.KV, last.Queue, last.Running = kv, queue, running
			return
		}
		if s.grid > 0 && !sampleIn(last.T, t, s.grid) {
			// No sample time in [last.T, t): last is never read.
			s.maxOut = max(s.maxOut, last.KV)
			*last = Sample{T: t, KV: kv, Queue: queue, Running: running}
			return
		}
		s.frozen.add(*last)
	}
	s.last, s.hasLast = Sample{T: t, KV: kv, Queue: queue, Running: running}, true
	for s.maxPts > 0 && s.Points() > s.maxPts && s.grid > 0 && s.grid < math.MaxInt64/2 {
		s.coarsen()
	}
}

// SetMaxPoints bounds the points a gridded series keeps (a server's,
// which runs for ever): past n, its grid doubles and the points no longer
// in force at a multiple of it are dropped (Max still counts them), so
// its memory is bounded by n and the interval instances.csv may use is a
// multiple of Grid. n is at least 2 (the first and the last point).
// Call it after SetGrid, before the first Observe.
func (s *Series) SetMaxPoints(n int) { s.maxPts = max(n, 2) }

// Grid is the series' grid interval (0: none): SetGrid's, doubled by
// each coarsening (SetMaxPoints).
func (s *Series) Grid() time.Duration { return s.grid }

// points returns every point kept, in time order (coarsen's: it re-encodes).
func (s *Series) points() []Sample {
	out := make([]Sample, 0, s.Points())
	it := s.cursor()
	for p, ok := it.next(); ok; p, ok = it.next() {
		out = append(out, p)
	}
	return out
}

// coarsen doubles the grid and keeps the points in force at some
// multiple of it (the last one always).
func (s *Series) coarsen() {
	s.grid *= 2
	pts := s.points()
	s.frozen = ptChunks{}
	for i, p := range pts[:len(pts)-1] {
		if sampleIn(p.T, pts[i+1].T, s.grid) {
			s.frozen.add(p)
		} else {
			s.maxOut = max(s.maxOut, p.KV)
		}
	}
}

// sampleIn reports whether a multiple of iv lies in [a, b) (0 ≤ a < b).
func sampleIn(a, b, iv time.Duration) bool {
	first := a + (iv-a%iv)%iv // the first multiple of iv at or after a
	return first < b
}

// At returns the state in force at time t.
func (s *Series) At(t time.Duration) Sample {
	if !s.hasLast {
		return Sample{T: t}
	}
	if t >= s.last.T {
		p := s.last
		p.T = t
		return p
	}
	cs := s.frozen.chunks
	i := sort.Search(len(cs), func(i int) bool { return cs[i].t0 > t }) // the chunks after the one in force
	if i == 0 {
		return Sample{T: t}
	}
	it := ptIter{b: cs[i-1].b}
	p, _ := it.next()
	for q, ok := it.next(); ok && q.T <= t; q, ok = it.next() {
		p = q
	}
	p.T = t
	return p
}

// Max returns the maximum KV observed.
func (s *Series) Max() int {
	m := max(s.maxOut, s.frozen.maxKV)
	if s.hasLast {
		m = max(m, s.last.KV)
	}
	return m
}

// Points is the number of change points kept.
func (s *Series) Points() int {
	if !s.hasLast {
		return 0
	}
	return s.frozen.n + 1
}

// cursor reads the series' points once, in time order.
func (s *Series) cursor() *seriesCursor { return &seriesCursor{s: s} }

// seriesCursor reads a series' points in order (next), or the state in
// force at non-decreasing times (at): what At returns, without a search.
type seriesCursor struct {
	s        *Series
	c        int // the chunk being read
	it       ptIter
	lastDone bool
	cur      Sample // the point in force at the last at
	have     bool
	peek     Sample
	peeked   bool
}

func (c *seriesCursor) next() (Sample, bool) {
	if c.peeked {
		c.peeked = false
		return c.peek, true
	}
	cs := c.s.frozen.chunks
	for c.c < len(cs) {
		if c.it.b == nil {
			c.it = ptIter{b: cs[c.c].b}
		}
		if p, ok := c.it.next(); ok {
			return p, true
		}
		c.c, c.it = c.c+1, ptIter{}
	}
	if !c.lastDone && c.s.hasLast {
		c.lastDone = true
		return c.s.last, true
	}
	return Sample{}, false
}

// at is At(t) for t no earlier than the previous call's.
func (c *seriesCursor) at(t time.Duration) Sample {
	for {
		p, ok := c.next()
		if !ok {
			break
		}
		if p.T > t {
			c.peek, c.peeked = p, true
			break
		}
		c.cur, c.have = p, true
	}
	if !c.have {
		return Sample{T: t}
	}
	p := c.cur
	p.T = t
	return p
}

// ptChunks is the frozen points of a Series.
type ptChunks struct {
	chunks []ptChunk
	n      int
	maxKV  int
	prev   Sample // the last point added (the next one's base)
}

type ptChunk struct {
	t0 time.Duration // the chunk's first point's time
	b  []byte
}

const ptChunkBytes = 2 << 10

func (pc *ptChunks) add(p Sample) {
	if len(pc.chunks) == 0 || len(pc.chunks[len(pc.chunks)-1].b)+4*binary.MaxVarintLen64 > ptChunkBytes {
		pc.chunks = append(pc.chunks, ptChunk{t0: p.T, b: make([]byte, 0, ptChunkBytes)})
		pc.prev = Sample{}
	}
	c := &pc.chunks[len(pc.chunks)-1]
	c.b = binary.AppendVarint(c.b, int64(p.T-pc.prev.T))
	c.b = binary.AppendVarint(c.b, int64(p.KV-pc.prev.KV))
	c.b = binary.AppendVarint(c.b, int64(p.Queue-pc.prev.Queue))
	c.b = binary.AppendVarint(c.b, int64(p.Running-pc.prev.Running))
	pc.prev = p
	pc.n++
	pc.maxKV = max(pc.maxKV, p.KV)
}

// ptIter decodes one chunk.
type ptIter struct {
	b   []byte
	off int
	p   Sample
}

func (it *ptIter) next() (Sample, bool) {
	if it.off >= len(it.b) {
		return Sample{}, false
	}
	var d [4]int64
	for k := range d {
		v, n := varint.Varint(it.b[it.off:])
		d[k] = v
		it.off += n
	}
	it.p = Sample{T: it.p.T + time.Duration(d[0]), KV: it.p.KV + int(d[1]), Queue: it.p.Queue + int(d[2]), Running: it.p.Running + int(d[3])}
	return it.p, true
}

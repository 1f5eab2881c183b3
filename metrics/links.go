package metrics

import (
	"encoding/binary"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdemu/pdemu/internal/varint"
)

// LinkRecorder collects links.csv: the state of every NIC each time it
// changes. It is safe for concurrent use (each link actor calls it). Rows
// are written in (time, NIC) order; past MaxLinkRows samples are dropped
// and counted.
//
// The rows are stored compactly, about 10 bytes a row instead of a
// 32-byte struct: the rows of the latest instant stay in a small pending
// list (a second change of a NIC at that instant replaces its row), and
// older rows are frozen into fixed-size chunks of varints (time as a
// zig-zag delta from the previous row, bytes in flight, the rate as an
// index into a table of the distinct rates seen — bit-exact —, active
// transfers, NIC index). While the rows come in time order (they do under
// the virtual clock) WriteLinks streams them, sorting only each instant's
// rows by NIC; otherwise it decodes them all and sorts, as before.
type LinkRecorder struct {
	mu     sync.Mutex
	capBps map[string]float64
	nics   []string         // by LinkID
	last   []linkLast       // by LinkID: the NIC's latest state
	nicIdx map[string]int32 // name -> LinkID

	frozen  linkChunks
	pending []linkPt // the rows at the latest instant (pending[0].t), in the order stored
	rates   []float64
	rateIdx map[uint64]uint32 // math.Float64bits(rate) -> index into rates

	unordered bool // a row came earlier than the one before it
	n         int  // rows stored (frozen and pending)
	dropped   int
	max       int // rows kept (0: MaxLinkRows; SetMaxRows)
}

// SetMaxRows keeps at most n rows (n > 0; default MaxLinkRows): later
// samples are dropped and counted (outputs.links_dropped), so a server's
// links.csv memory is bounded however long it runs.
func (r *LinkRecorder) SetMaxRows(n int) {
	if r == nil || n <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.max = n
}

// LinkID is a NIC's handle in a LinkRecorder: NIC returns it, Link takes
// it (a NIC's samples are the link actors' most frequent records, and a
// handle spares them three string-keyed map operations each).
type LinkID int32

// linkLast is a NIC's latest state (set: it has one).
type linkLast struct {
	inFlight int64
	rate     float64
	active   int
	set      bool
}

// linkPt is a decoded row (the NIC by index).
type linkPt struct {
	t        time.Duration
	inFlight int64
	rate     float64
	active   int32 // transfers in flight on one NIC: far below 2^31
	nic      int32
}

// NewLinkRecorder returns an empty recorder.
func NewLinkRecorder() *LinkRecorder {
	return &LinkRecorder{capBps: map[string]float64{}, nicIdx: map[string]int32{}, rateIdx: map[uint64]uint32{}}
}

// NIC declares a NIC and its line rate in bytes/s (utilisation = rate /
// it) and returns its handle for Link. Declaring a NIC again updates its
// line rate and returns the same handle.
func (r *LinkRecorder) NIC(nic string, capBytesPerSec float64) LinkID {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.capBps[nic] = capBytesPerSec
	ni, ok := r.nicIdx[nic]
	if !ok {
		ni = int32(len(r.nics))
		r.nicIdx[nic] = ni
		r.nics = append(r.nics, nic)
		r.last = append(r.last, linkLast{})
	}
	return LinkID(ni)
}

// Link records the state of NIC id (NIC's handle) at now: bytes still to move, the aggregate
// rate in bytes/s and the active transfers. An unchanged state is not
// stored; a second change at the same instant replaces the first.
func (r *LinkRecorder) Link(now time.Duration, id LinkID, bytesInFlight int64, rate float64, active int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l := &r.last[id]
	if l.set && l.inFlight == bytesInFlight && l.rate == rate && l.active == active {
		return
	}
	*l = linkLast{inFlight: bytesInFlight, rate: rate, active: active, set: true}
	ni := int32(id)
	p := linkPt{t: now, inFlight: bytesInFlight, rate: rate, active: int32(active), nic: ni}
	if len(r.pending) > 0 && r.pending[0].t == now {
		for i := len(r.pending) - 1; i >= 0; i-- {
			if r.pending[i].nic == ni {
				r.pending[i] = p
				return
			}
		}
	}
	if r.n >= MaxLinkRows || r.max > 0 && r.n >= r.max {
		r.dropped++
		return
	}
	if len(r.pending) > 0 && r.pending[0].t != now {
		if now < r.pending[0].t {
			r.unordered = true
		}
		for _, q := range r.pending {
			r.freeze(q)
		}
		r.pending = r.pending[:0]
	}
	r.pending = append(r.pending, p)
	r.n++
}

// freeze appends a row to the chunks.
func (r *LinkRecorder) freeze(p linkPt) {
	bits := math.Float64bits(p.rate)
	ri, ok := r.rateIdx[bits]
	if !ok {
		ri = uint32(len(r.rates))
		r.rateIdx[bits] = ri
		r.rates = append(r.rates, p.rate)
	}
	r.frozen.add(p, ri)
}

// Rows counts the stored and the dropped samples.
func (r *LinkRecorder) Rows() (rows, dropped int) {
	if r == nil {
		return 0, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.dropped
}

// each calls f with every row in the order stored (frozen, then pending).
func (r *LinkRecorder) each(f func(p linkPt) error) error {
	it := r.frozen.iter(r.rates)
	for p, ok := it.next(); ok; p, ok = it.next() {
		if err := f(p); err != nil {
			return err
		}
	}
	for _, p := range r.pending {
		if err := f(p); err != nil {
			return err
		}
	}
	return nil
}

// LinksHeader is the header of links.csv.
var LinksHeader = []string{"t_ms", "nic", "bytes_in_flight", "rate_gbps", "active_transfers", "utilisation"}

// WriteLinks writes links.csv (a header only when r is nil or empty).
func WriteLinks(w io.Writer, r *LinkRecorder) error {
	if err := writeHeader(w, LinksHeader); err != nil {
		return err
	}
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Rows are appended (csvappend.go): the NIC column encoded once per NIC
	// as csv.Writer quotes it; numbers never need quotes.
	seg, capOf := make([]string, len(r.nics)), make([]float64, len(r.nics))
	for i, nic := range r.nics {
		seg[i], capOf[i] = csvSeg(nic), r.capBps[nic]
	}
	rb := newRowBuf(w)
	// The rate and utilisation columns, formatted once per NIC and rate:
	// a run has few distinct rates (LinkRecorder.rates); each NIC keeps
	// the first rateCols it sees, searched in order.
	type rateCol struct {
		bits       uint64
		gbps, util []byte
	}
	const rateCols = 16
	cols := make([][]rateCol, len(r.nics))
	write := func(q linkPt) error {
		b := appendFMS(rb.b, q.t)
		b = append(b, ',')
		b = append(b, seg[q.nic]...)
		b = append(b, ',')
		b = strconv.AppendInt(b, q.inFlight, 10)
		b = append(b, ',')
		bits, seen := math.Float64bits(q.rate), cols[q.nic]
		var rc *rateCol
		for i := range seen {
			if seen[i].bits == bits {
				rc = &seen[i]
				break
			}
		}
		if rc == nil {
			rc = &rateCol{bits: bits, gbps: strconv.AppendFloat(nil, q.rate*8/1e9, 'f', 3, 64)}
			if c := capOf[q.nic]; c > 0 {
				rc.util = strconv.AppendFloat(nil, q.rate/c, 'f', 4, 64)
			}
			if len(seen) < rateCols {
				cols[q.nic] = append(seen, *rc)
			}
		}
		b = append(b, rc.gbps...)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(q.active), 10)
		b = append(b, ',')
		b = append(b, rc.util...)
		rb.b = b
		return rb.row()
	}
	err := func() error {
		byName := func(g []linkPt) {
			if len(g) > 1 {
				slices.SortStableFunc(g, func(a, b linkPt) int { return strings.Compare(r.nics[a.nic], r.nics[b.nic]) })
			}
		}
		if r.unordered {
			all := make([]linkPt, 0, r.n)
			r.each(func(p linkPt) error { all = append(all, p); return nil })
			sort.SliceStable(all, func(i, j int) bool {
				if all[i].t != all[j].t {
					return all[i].t < all[j].t
				}
				return r.nics[all[i].nic] < r.nics[all[j].nic]
			})
			for _, q := range all {
				if err := write(q); err != nil {
					return err
				}
			}
			return nil
		}
		// In time order: a stable sort by (time, NIC) is a stable sort of
		// each instant's rows by NIC.
		var group []linkPt
		flush := func() error {
			byName(group)
			for _, q := range group {
				if err := write(q); err != nil {
					return err
				}
			}
			group = group[:0]
			return nil
		}
		err := r.each(func(p linkPt) error {
			if len(group) > 0 && group[0].t != p.t {
				if err := flush(); err != nil {
					return err
				}
			}
			group = append(group, p)
			return nil
		})
		if err != nil {
			return err
		}
		return flush()
	}()
	if err != nil {
		return err
	}
	return rb.flush()
}

// linkChunks is the frozen rows of a LinkRecorder.
type linkChunks struct {
	chunks [][]byte
	prevT  time.Duration
}

const linkChunkBytes = 64 << 10

func (lc *linkChunks) add(p linkPt, rate uint32) {
	if len(lc.chunks) == 0 || len(lc.chunks[len(lc.chunks)-1])+5*binary.MaxVarintLen64 > linkChunkBytes {
		lc.chunks = append(lc.chunks, make([]byte, 0, linkChunkBytes))
	}
	c := &lc.chunks[len(lc.chunks)-1]
	*c = binary.AppendVarint(*c, int64(p.t-lc.prevT))
	*c = binary.AppendVarint(*c, p.inFlight)
	*c = binary.AppendUvarint(*c, uint64(rate))
	*c = binary.AppendVarint(*c, int64(p.active))
	*c = binary.AppendUvarint(*c, uint64(p.nic))
	lc.prevT = p.t
}

func (lc *linkChunks) iter(rates []float64) linkIter { return linkIter{lc: lc, rates: rates} }

type linkIter struct {
	lc    *linkChunks
	rates []float64
	c     int
	off   int
	t     time.Duration
}

func (it *linkIter) next() (linkPt, bool) {
	for it.c < len(it.lc.chunks) && it.off >= len(it.lc.chunks[it.c]) {
		it.c, it.off = it.c+1, 0
	}
	if it.c >= len(it.lc.chunks) {
		return linkPt{}, false
	}
	b := it.lc.chunks[it.c]
	dt, n := varint.Varint(b[it.off:])
	it.off += n
	inFlight, n := varint.Varint(b[it.off:])
	it.off += n
	ri, n := varint.Uvarint(b[it.off:])
	it.off += n
	active, n := varint.Varint(b[it.off:])
	it.off += n
	nic, n := varint.Uvarint(b[it.off:])
	it.off += n
	it.t += time.Duration(dt)
	return linkPt{t: it.t, inFlight: inFlight, rate: it.rates[ri], active: int32(active), nic: int32(nic)}, true
}

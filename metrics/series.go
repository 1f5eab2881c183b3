package metrics

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Output bounds (docs/OUTPUTS.md): no run writes more rows than these.
const (
	// MaxInstanceRows bounds instances.csv: beyond it the sample interval
	// is widened (to a whole multiple of the scenario's) and summary.json
	// outputs.instances_interval_widened says so.
	MaxInstanceRows = 2_000_000
	// MaxLinkRows bounds links.csv: later change points are dropped and
	// counted in summary.json outputs.links_rows_dropped.
	MaxLinkRows = 2_000_000
	// MaxRouterWindows bounds router_windows.csv: the window (1 s by
	// default) is widened to whole seconds to keep at most this many rows.
	MaxRouterWindows = 100_000
)

// InstancesPlan returns the sample interval instances.csv uses for n
// series over [0, end] and the rows it will write: interval itself, or
// the smallest whole multiple of it that keeps the rows ≤ MaxInstanceRows.
func InstancesPlan(n int, interval, end time.Duration) (time.Duration, int, bool) {
	if interval <= 0 {
		interval = time.Second
	}
	rows := func(iv time.Duration) int {
		if n == 0 {
			return 0
		}
		return int(samples(iv, end)) * n
	}
	if rows(interval) <= MaxInstanceRows {
		return interval, rows(interval), false
	}
	steps := float64(MaxInstanceRows)/float64(n) - 1
	k := time.Duration(math.Ceil(float64(end) / float64(interval) / max(steps, 1)))
	for rows(k*interval) > MaxInstanceRows {
		k++
	}
	return k * interval, rows(k * interval), true
}

// samples is how many sample times 0, iv, 2·iv, … cover [0, end]: up to
// the first one at or past end (without overflowing for any end).
func samples(iv, end time.Duration) int64 {
	k := int64(end / iv)
	if end%iv != 0 {
		k++
	}
	return k + 1
}

// sampleAt is the k-th sample time, saturating at the largest duration.
func sampleAt(k int64, iv time.Duration) time.Duration {
	if k > 0 && int64(iv) > math.MaxInt64/k {
		return math.MaxInt64
	}
	return time.Duration(k) * iv
}

// ---------------------------------------------------------------- links

// LinkSample is one change point of a NIC (a row of links.csv).
type LinkSample struct {
	T             time.Duration
	NIC           string
	BytesInFlight int64
	Rate          float64 // bytes/s being moved now (all transfers)
	Active        int     // transfers in flight
}

// LinkRecorder collects links.csv: the state of every NIC each time it
// changes. It is safe for concurrent use (each link actor calls it). Rows
// are written in (time, NIC) order; past MaxLinkRows samples are dropped
// and counted.
type LinkRecorder struct {
	mu      sync.Mutex
	capBps  map[string]float64
	last    map[string]LinkSample
	nics    []string         // by index
	nicIdx  map[string]int32 // name -> index
	pts     []linkChunk      // the samples, compact, in fixed-size chunks (no append slack)
	n       int
	dropped int
	max     int // rows kept (0: MaxLinkRows; SetMaxRows)
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

// linkPt is a stored LinkSample (32 bytes; the NIC by index).
type linkPt struct {
	t        time.Duration
	inFlight int64
	rate     float64
	active   int32 // transfers in flight on one NIC: far below 2^31
	nic      int32
}

type linkChunk = []linkPt

const linkChunkLen = 1 << 14

func (r *LinkRecorder) at(i int) *linkPt { return &r.pts[i/linkChunkLen][i%linkChunkLen] }

// NewLinkRecorder returns an empty recorder.
func NewLinkRecorder() *LinkRecorder {
	return &LinkRecorder{capBps: map[string]float64{}, last: map[string]LinkSample{}, nicIdx: map[string]int32{}}
}

// NIC declares a NIC and its line rate in bytes/s (utilisation = rate / it).
func (r *LinkRecorder) NIC(nic string, capBytesPerSec float64) {
	r.mu.Lock()
	r.capBps[nic] = capBytesPerSec
	r.mu.Unlock()
}

// Link records the NIC's state at now: bytes still to move, the aggregate
// rate in bytes/s and the active transfers. An unchanged state is not
// stored; a second change at the same instant replaces the first.
func (r *LinkRecorder) Link(now time.Duration, nic string, bytesInFlight int64, rate float64, active int) {
	if r == nil {
		return
	}
	s := LinkSample{T: now, NIC: nic, BytesInFlight: bytesInFlight, Rate: rate, Active: active}
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.last[nic]; ok && l.BytesInFlight == bytesInFlight && l.Rate == rate && l.Active == active {
		return
	}
	r.last[nic] = s
	ni, ok := r.nicIdx[nic]
	if !ok {
		ni = int32(len(r.nics))
		r.nicIdx[nic] = ni
		r.nics = append(r.nics, nic)
	}
	p := linkPt{t: now, inFlight: bytesInFlight, rate: rate, active: int32(active), nic: ni}
	for i := r.n - 1; i >= 0 && r.at(i).t == now; i-- {
		if r.at(i).nic == ni {
			*r.at(i) = p
			return
		}
	}
	if r.n >= MaxLinkRows || r.max > 0 && r.n >= r.max {
		r.dropped++
		return
	}
	if r.n%linkChunkLen == 0 {
		r.pts = append(r.pts, make(linkChunk, 0, linkChunkLen))
	}
	c := &r.pts[len(r.pts)-1]
	*c = append(*c, p)
	r.n++
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

// LinksHeader is the header of links.csv.
var LinksHeader = []string{"t_ms", "nic", "bytes_in_flight", "rate_gbps", "active_transfers", "utilisation"}

// WriteLinks writes links.csv (a header only when r is nil or empty).
func WriteLinks(w io.Writer, r *LinkRecorder) error {
	return writeCSV(w, LinksHeader, func(cw *csv.Writer) error {
		if r != nil {
			r.mu.Lock()
			defer r.mu.Unlock()
			caps := r.capBps
			// Sort an index, not a copy of the samples.
			idx := make([]int32, r.n)
			for i := range idx {
				idx[i] = int32(i)
			}
			sort.SliceStable(idx, func(i, j int) bool {
				a, b := r.at(int(idx[i])), r.at(int(idx[j]))
				if a.t != b.t {
					return a.t < b.t
				}
				return r.nics[a.nic] < r.nics[b.nic]
			})
			for _, i := range idx {
				q := r.at(int(i))
				p := LinkSample{T: q.t, NIC: r.nics[q.nic], BytesInFlight: q.inFlight, Rate: q.rate, Active: int(q.active)}
				util := ""
				if c := caps[p.NIC]; c > 0 {
					util = strconv.FormatFloat(p.Rate/c, 'f', 4, 64)
				}
				if err := cw.Write([]string{fms(p.T), p.NIC, strconv.FormatInt(p.BytesInFlight, 10),
					strconv.FormatFloat(p.Rate*8/1e9, 'f', 3, 64), strconv.Itoa(p.Active), util}); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// ---------------------------------------------------------------- router

// Router event kinds (RouterRecorder.Event).
const (
	RouterMigration = "migration"
	RouterBlacklist = "blacklist"
	RouterFallback  = "fallback"
	RouterRejection = "rejection"
)

// RouterRecorder collects the router's decisions over time for
// router_windows.csv: counts per kind and emulated second (windows are
// whole seconds), kept sparse, so its memory grows with the seconds that
// had events, never with the run's emulated length. It is safe for concurrent use. A run that does not feed it
// writes 0 in those columns.
type RouterRecorder struct {
	mu   sync.Mutex
	bins bins[[4]int32] // by second: migrations, blacklists, fallbacks, rejections
}

// Bound bounds the recorder's memory (a server's): past maxChunks chunks
// of seconds, a bin counts twice as many seconds (Resolution).
func (r *RouterRecorder) Bound(maxChunks int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bins.bound(maxChunks, func(dst, src *[4]int32) {
		for k := range dst {
			dst[k] += src[k]
		}
	})
}

// Resolution is how many seconds a bin counts (1 s unless bounded).
func (r *RouterRecorder) Resolution() time.Duration {
	if r == nil {
		return time.Second
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Duration(r.bins.resolution()) * time.Second
}

// RouterWindowFor is RouterWindow(end) widened to a multiple of each
// resolution (whole seconds: Arrivals.Resolution, RouterRecorder.Resolution).
func RouterWindowFor(end time.Duration, res ...time.Duration) time.Duration {
	w := RouterWindow(end)
	for _, r := range res {
		if r > 0 && w%r != 0 {
			a, b := w, r
			for b != 0 {
				a, b = b, a%b
			}
			w = w / a * r
		}
	}
	return w
}

// NewRouterRecorder returns an empty recorder.
func NewRouterRecorder() *RouterRecorder { return &RouterRecorder{} }

// Event records one router event of kind (RouterMigration, …) at now.
func (r *RouterRecorder) Event(now time.Duration, kind string) {
	if r == nil {
		return
	}
	k := -1
	switch kind {
	case RouterMigration:
		k = 0
	case RouterBlacklist:
		k = 1
	case RouterFallback:
		k = 2
	case RouterRejection:
		k = 3
	}
	i := int(max(now, 0) / time.Second)
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bins.at(int64(i))
	if k >= 0 {
		b[k]++
	}
}

// RouterWindowsHeader is the header of router_windows.csv.
var RouterWindowsHeader = []string{"t_ms", "window_ms", "requests", "direct", "migrations", "blacklists", "fallbacks", "rejections", "direct_share"}

// RouterWindow returns the window router_windows.csv uses for a run that
// ended at end: 1 s, widened to whole seconds to keep ≤ MaxRouterWindows.
func RouterWindow(end time.Duration) time.Duration {
	w := time.Second
	if n := end/w + 1; n > MaxRouterWindows {
		w *= time.Duration(math.Ceil(float64(n) / MaxRouterWindows))
	}
	return w
}

// WriteRouterWindows writes router_windows.csv: per window of arrival
// time, the requests that arrived (unfinished ones included), those served
// Direct (completed), the router events of r (nil: 0) and the Direct
// share. Windows run from 0 to the last arrival or event.
//
// window must be a whole number of seconds (as RouterWindow's are): the
// router events are counted per second.
func WriteRouterWindows(w io.Writer, recs []Record, r *RouterRecorder, window time.Duration) error {
	return WriteRouterWindowsOf(w, ArrivalsOf(recs), r, window)
}

// WriteRouterWindowsOf is WriteRouterWindows with the requests counted
// per second of arrival; window must be a whole number of seconds (as
// RouterWindow's are).
func WriteRouterWindowsOf(w io.Writer, a *Arrivals, r *RouterRecorder, window time.Duration) error {
	if window%time.Second != 0 {
		return fmt.Errorf("router windows: %v is not a whole number of seconds", window)
	}
	return writeRouterWindows(w, func(at func(time.Duration) (req, direct *int)) {
		if a.bins.last() < 0 {
			return
		}
		at(time.Duration(a.bins.last()) * time.Second) // the rows up to the last arrival
		a.bins.each(func(i int64, b *arrivalBin) {
			if b.req == 0 {
				return
			}
			req, direct := at(time.Duration(i) * time.Second)
			*req += int(b.req)
			*direct += int(b.direct)
		})
	}, r, window)
}

// writeRouterWindows writes the windows; count adds the requests through
// at, which returns the counters of the window of an arrival time.
func writeRouterWindows(w io.Writer, count func(at func(time.Duration) (req, direct *int)), r *RouterRecorder, window time.Duration) error {
	return writeCSV(w, RouterWindowsHeader, func(cw *csv.Writer) error {
		type row struct{ req, direct, mig, bl, fb, rej int }
		var rows []row
		at := func(t time.Duration) *row {
			i := int(max(t, 0) / window)
			for len(rows) <= i {
				rows = append(rows, row{})
			}
			return &rows[i]
		}
		count(func(t time.Duration) (req, direct *int) {
			x := at(t)
			return &x.req, &x.direct
		})
		if r != nil {
			r.mu.Lock()
			if r.bins.last() >= 0 {
				at(time.Duration(r.bins.last()) * time.Second) // an event makes its window's row
			}
			r.bins.each(func(i int64, b *[4]int32) {
				if *b == ([4]int32{}) {
					return
				}
				x := at(time.Duration(i) * time.Second)
				x.mig += int(b[0])
				x.bl += int(b[1])
				x.fb += int(b[2])
				x.rej += int(b[3])
			})
			r.mu.Unlock()
		}
		for i, x := range rows {
			share := ""
			if x.req > 0 {
				share = strconv.FormatFloat(float64(x.direct)/float64(x.req), 'f', 4, 64)
			}
			if err := cw.Write([]string{fms(time.Duration(i) * window), fms(window), strconv.Itoa(x.req), strconv.Itoa(x.direct),
				strconv.Itoa(x.mig), strconv.Itoa(x.bl), strconv.Itoa(x.fb), strconv.Itoa(x.rej), share}); err != nil {
				return err
			}
		}
		return nil
	})
}

package metrics

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/pdemu/pdemu/internal/appendnum"
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
	var rows []windowRow
	at := func(t time.Duration) *windowRow {
		i := int(max(t, 0) / window)
		for len(rows) <= i {
			rows = append(rows, windowRow{})
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
	return writeWindowRows(w, rows, window)
}

// windowRow is one row of router_windows.csv: its counters.
type windowRow struct{ req, direct, mig, bl, fb, rej int }

// writeWindowRows writes router_windows.csv's header and rows (row i is
// the window from i·window), appended as csv.Writer writes them (numbers
// never need quotes).
func writeWindowRows(w io.Writer, rows []windowRow, window time.Duration) error {
	if err := writeHeader(w, RouterWindowsHeader); err != nil {
		return err
	}
	win := string(appendFMS(nil, window))
	rb := newRowBuf(w)
	for i, x := range rows {
		b := appendFMS(rb.b, time.Duration(i)*window)
		b = append(append(b, ','), win...)
		for _, n := range [...]int{x.req, x.direct, x.mig, x.bl, x.fb, x.rej} {
			b = appendnum.Int(append(b, ','), int64(n))
		}
		b = append(b, ',')
		if x.req > 0 {
			b = strconv.AppendFloat(b, float64(x.direct)/float64(x.req), 'f', 4, 64)
		}
		rb.b = b
		if err := rb.row(); err != nil {
			return err
		}
	}
	return rb.flush()
}

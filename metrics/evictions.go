package metrics

import (
	"io"
	"time"

	"github.com/pdemu/pdemu/internal/appendnum"
)

// EvictionRow is one row of evictions.csv: a decode worker dropped a
// session's KV.
type EvictionRow struct {
	At      time.Duration
	Worker  string
	Session string
	Tokens  int    // KV tokens dropped
	Cause   string // gpu.EvictCause's name: capacity, transfer-failed, session-end, worker-crashed
	For     int64  // the request whose room it made (capacity) or whose transfer failed; -1: none
}

// EvictionsHeader is the header of evictions.csv.
var EvictionsHeader = []string{"time_ms", "worker", "session", "tokens", "cause", "for_request"}

// WriteEvictions writes evictions.csv (rows in the order given: time order,
// then worker order).
func WriteEvictions(w io.Writer, rows []EvictionRow) error {
	if err := writeHeader(w, EvictionsHeader); err != nil {
		return err
	}
	rb := newRowBuf(w)
	for _, r := range rows {
		rb.b = appendEvictionFields(rb.b, r)
		if err := rb.row(); err != nil {
			return err
		}
	}
	return rb.flush()
}

// AppendEvictionsHeader appends evictions.csv's header line to b.
func AppendEvictionsHeader(b []byte) []byte {
	return append(append(b, csvSeg(EvictionsHeader...)...), '\n')
}

// AppendEvictionRow appends one evictions.csv row, newline included, to
// b: the bytes csv.Writer writes for the row's fields.
func AppendEvictionRow(b []byte, r EvictionRow) []byte {
	return append(appendEvictionFields(b, r), '\n')
}

func appendEvictionFields(b []byte, r EvictionRow) []byte {
	b = appendFMS(b, r.At)
	b = appendCSVField(append(b, ','), r.Worker)
	b = appendCSVField(append(b, ','), r.Session)
	b = appendnum.Int(append(b, ','), int64(r.Tokens))
	b = appendCSVField(append(b, ','), r.Cause)
	b = append(b, ',')
	if r.For >= 0 {
		b = appendnum.Int(b, r.For)
	}
	return b
}

package metrics

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"
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
	return writeCSV(w, EvictionsHeader, func(cw *csv.Writer) error {
		for _, r := range rows {
			if err := WriteEvictionRow(cw, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// WriteEvictionRow writes one evictions.csv row (after the header) to cw.
func WriteEvictionRow(cw *csv.Writer, r EvictionRow) error {
	forReq := ""
	if r.For >= 0 {
		forReq = strconv.FormatInt(r.For, 10)
	}
	return cw.Write([]string{fms(r.At), r.Worker, r.Session, strconv.Itoa(r.Tokens), r.Cause, forReq})
}

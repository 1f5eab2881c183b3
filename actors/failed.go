package actors

import (
	"errors"
	"slices"
	"strings"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/workload"
)

// MaxMissingIDs bounds summary.json missing_ids (per_request.csv lists
// every unfinished request).
const MaxMissingIDs = 100

// maxErrorBytes bounds summary.json error.
const maxErrorBytes = 2000

// StoppedByBadRecord is stopped_by for a run that stopped on a malformed
// trace record (without --skip-bad).
const StoppedByBadRecord = "bad-record"

// markFailed records in res's summary why the run failed (err, the run's
// error; nil: nothing) and the requests that did not end: a failed run's
// summary.json never reads as a clean run's. The PartialError of a
// stopped run is not an error of its own (partial and stopped_by say it);
// what is joined to it is.
func markFailed(res *Result, cl *cluster.Cluster, err error) {
	var msgs []string
	for _, e := range flatten(err) {
		if _, ok := e.(*PartialError); ok {
			continue
		}
		msgs = append(msgs, e.Error())
	}
	var pe *PartialError
	if errors.As(err, &pe) && errors.As(pe.Err, new(*workload.RecordError)) {
		msgs = append(msgs, pe.Err.Error()) // the bad record is the run's error
	}
	if len(msgs) > 0 {
		s := strings.Join(msgs, "; ")
		if len(s) > maxErrorBytes {
			s = s[:maxErrorBytes] + "…"
		}
		res.Summary.Error = s
	}
	if err == nil {
		return
	}
	var ids []int64
	for _, r := range res.Unfinished {
		ids = append(ids, r.ID)
	}
	col := cl.Collector()
	for id := int64(0); id < int64(cl.Released()) && len(ids) < 4*MaxMissingIDs; id++ {
		if !col.Seen(id) && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > MaxMissingIDs {
		ids = ids[:MaxMissingIDs]
	}
	res.Summary.MissingIDs = ids
	if len(ids) > 0 || res.Summary.Error != "" {
		res.Summary.Warnings = metrics.Warnings(res.Summary)
	}
}

// flatten lists the errors joined in err (errors.Join), in order.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

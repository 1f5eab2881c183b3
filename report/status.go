package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Run statuses, in compare.csv's status column: only StatusOK runs are
// clean results (and only they may be a baseline).
const (
	StatusOK      = "ok"
	StatusFailed  = "failed"  // more than MaxFailedShare of the requests failed
	StatusPartial = "partial" // stopped before every request ended (signal, timeout, bad record)
	StatusError   = "error"   // summary.json records an error
	StatusEmpty   = "empty"   // no request at all
)

// MaxFailedShare is the failed share above which a run's status is
// StatusFailed: pdemu's --max-failed default (output.DefaultMaxFailed),
// above which run and compare exit 3.
const MaxFailedShare = 0.01

// RunStatus is a run's status and the sentence that explains it.
type RunStatus struct {
	Code   string
	Detail string // "" for a clean run
}

// OK reports whether the run is a clean result.
func (s RunStatus) OK() bool { return s.Code == StatusOK }

// StatusOf classifies a run from its summary.json: an error, then a
// partial run, then no requests, then too many failed requests; a run
// with fewer failures is ok, its detail counting them.
func StatusOf(s Summary) RunStatus {
	q := s.Requests
	switch {
	case s.Error != "":
		return RunStatus{StatusError, s.Error}
	case s.Partial:
		by := s.StoppedBy
		if by == "" {
			by = "an unknown cause"
		}
		return RunStatus{StatusPartial, fmt.Sprintf("stopped by %s with %d requests unfinished", by, q.Unfinished)}
	case q.Total == 0:
		return RunStatus{StatusEmpty, "no requests"}
	case float64(q.Failed) > MaxFailedShare*float64(q.Total):
		return RunStatus{StatusFailed, failedDetail(q.Failed, q.Total, q.FailReasons)}
	case q.Failed > 0:
		return RunStatus{StatusOK, failedDetail(q.Failed, q.Total, q.FailReasons)}
	}
	return RunStatus{StatusOK, ""}
}

func failedDetail(failed, total int, reasons map[string]int) string {
	type rc struct {
		r string
		n int
	}
	var rs []rc
	for r, n := range reasons {
		rs = append(rs, rc{r, n})
	}
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].n != rs[j].n {
			return rs[i].n > rs[j].n
		}
		return rs[i].r < rs[j].r
	})
	var parts []string
	for _, x := range rs {
		parts = append(parts, fmt.Sprintf("%s %d", x.r, x.n))
	}
	d := fmt.Sprintf("%d of %d requests failed (%.1f %%)", failed, total, 100*float64(failed)/float64(total))
	if len(parts) > 0 {
		d += ": " + strings.Join(parts, ", ")
	}
	return d
}

// SLOFigures are the SLO attainment and goodput of a run, when its
// summary.json has them (nil fields otherwise).
type SLOFigures struct {
	// Attainment is the share of requests meeting every SLO (0..1).
	Attainment *float64 `json:"attainment,omitempty"`
	// GoodputRPS is the requests per second meeting every SLO.
	GoodputRPS *float64 `json:"goodput_rps,omitempty"`
	// SessionAttainment is the share of sessions whose requests all met it.
	SessionAttainment *float64 `json:"session_attainment,omitempty"`
	// Target is the attainment the SLO asks for and OK whether the run
	// reached it (nil when summary.json does not say).
	Target *float64 `json:"target,omitempty"`
	OK     *bool    `json:"ok,omitempty"`
	// Objective describes the thresholds ("TTFT ≤ 10 s, TPOT ≤ 100 ms").
	Objective string `json:"objective,omitempty"`
	// Overloaded is summary.json's overload verdict (p99 TTFT far beyond
	// the SLO, or TTFT growing over the run); Verdict says why.
	Overloaded bool   `json:"overloaded,omitempty"`
	Verdict    string `json:"verdict,omitempty"`
}

func (f SLOFigures) any() bool {
	return f.Attainment != nil || f.GoodputRPS != nil || f.SessionAttainment != nil
}

// sloOf reads the SLO figures of s. summary.json's slo and goodput
// objects are read by key, tolerating absence and extra keys: the first
// number found under any of a figure's names (at the top of the object,
// or one level down) is used.
func sloOf(s Summary) SLOFigures {
	var f SLOFigures
	objs := []map[string]any{}
	for _, raw := range []json.RawMessage{s.SLO, s.Goodput} {
		var m map[string]any
		if len(raw) > 0 && json.Unmarshal(raw, &m) == nil && m != nil {
			objs = append(objs, m)
		}
	}
	if len(objs) == 0 {
		return f
	}
	find := func(names ...string) *float64 {
		for _, m := range objs {
			for _, n := range names {
				if v, ok := m[n].(float64); ok {
					return &v
				}
			}
		}
		for _, m := range objs {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				sub, ok := m[k].(map[string]any)
				if !ok {
					continue
				}
				for _, n := range names {
					if v, ok := sub[n].(float64); ok {
						return &v
					}
				}
			}
		}
		return nil
	}
	f.Attainment = find("attainment", "request_attainment", "requests_attainment", "attained_share")
	f.GoodputRPS = find("goodput_rps", "requests_per_s", "goodput_requests_per_s", "rps")
	f.SessionAttainment = find("session_attainment", "sessions_attainment", "sessions_share")
	if f.Attainment != nil && *f.Attainment > 1 { // given in per cent
		v := *f.Attainment / 100
		f.Attainment = &v
	}
	if f.SessionAttainment != nil && *f.SessionAttainment > 1 {
		v := *f.SessionAttainment / 100
		f.SessionAttainment = &v
	}
	if !f.any() {
		return f
	}
	f.Target = find("target", "attainment_target")
	if f.Target != nil && *f.Target > 1 {
		v := *f.Target / 100
		f.Target = &v
	}
	m := objs[0]
	if ok, isBool := m["ok"].(bool); isBool {
		f.OK = &ok
	} else if f.Target != nil && f.Attainment != nil {
		ok := *f.Attainment >= *f.Target
		f.OK = &ok
	}
	f.Overloaded, _ = m["overloaded"].(bool)
	f.Verdict, _ = m["verdict"].(string)
	var parts []string
	for _, th := range []struct{ key, name string }{{"ttft_ms", "TTFT"}, {"tpot_ms", "TPOT"}, {"e2e_ms", "E2E"}} {
		if v, ok := m[th.key].(float64); ok && v > 0 {
			parts = append(parts, th.name+" ≤ "+fmtMS(v))
		}
	}
	f.Objective = strings.Join(parts, ", ")
	return f
}

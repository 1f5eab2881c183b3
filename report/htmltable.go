package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// cell is one value of the report's table: the value with its unit and,
// below it, the change against the workload's baseline.
type cell struct {
	Value string
	Delta string // "" none; "baseline" on the baseline's row
	Class string // "better", "worse" or ""
	Title string // tooltip: the exact value
	Note  string // a warning under the value ("below the 90 % target")
}

// tableRow is one run's line of the report's table.
type tableRow struct {
	Name     []string // the run's name cut after each "__" (the page may wrap there)
	Anchor   string
	Status   string
	Detail   string
	OK       bool
	Baseline bool
	// Overloaded is summary.json's SLO overload verdict, Verdict its reason.
	Overloaded bool
	Verdict    string
	Cells      []cell
}

// column is one figure of the table: how to read it from a row, how to
// format it, and which way is better.
type tableColumn struct {
	Head, Unit string
	get        func(Row) (float64, bool)
	format     func(float64) string
	// lowerBetter: a decrease is an improvement; points: the delta is in
	// percentage points (shares), not per cent.
	lowerBetter, points bool
	noDelta             bool // counts of events, not figures to compare
	// note, when set, is a warning about the row's value ("" none).
	note func(Row) string
}

// deltaFloor is the smallest change shown as a change (smaller ones are
// "±0"): below it, run-to-run noise would read as a trend.
const deltaFloor = 0.005

func tableColumns(rows []Row) []tableColumn {
	ms := func(f func(Row) float64) func(Row) (float64, bool) {
		return func(r Row) (float64, bool) { return f(r), r.Completed > 0 }
	}
	perReq := func(f func(Row) float64) func(Row) (float64, bool) {
		return func(r Row) (float64, bool) { return f(r), hasFile(r, "per_request.csv") }
	}
	pct := func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + " %" }
	cols := []tableColumn{
		{Head: "requests", get: func(r Row) (float64, bool) { return float64(r.Requests), true },
			format: func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }, noDelta: true},
		{Head: "failed", get: func(r Row) (float64, bool) {
			if r.Requests == 0 {
				return 0, false
			}
			return float64(r.Failed) / float64(r.Requests), true
		}, format: pct, lowerBetter: true, points: true},
		{Head: "Direct", get: func(r Row) (float64, bool) { return r.ModeShare["Direct"], r.Requests > 0 }, format: pct, points: true},
		{Head: "TTFT p50", get: ms(func(r Row) float64 { return r.TTFT.P50 }), format: fmtMS, lowerBetter: true},
		{Head: "TTFT p99", get: ms(func(r Row) float64 { return r.TTFT.P99 }), format: fmtMS, lowerBetter: true},
		{Head: "E2E p50", get: ms(func(r Row) float64 { return r.E2E.P50 }), format: fmtMS, lowerBetter: true},
		{Head: "E2E p99", get: ms(func(r Row) float64 { return r.E2E.P99 }), format: fmtMS, lowerBetter: true},
		{Head: "prefilled", Unit: "tokens", get: perReq(func(r Row) float64 { return float64(r.PrefilledTokens) }), format: fmtCount, lowerBetter: true},
		{Head: "KV moved", get: perReq(func(r Row) float64 { return float64(r.TransferBytes) }), format: fmtBytes, lowerBetter: true},
		{Head: "imbalance", get: func(r Row) (float64, bool) { return r.Imbalance, r.Imbalance > 0 },
			format: func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "×" }, lowerBetter: true},
	}
	var att, gp, sess bool
	for _, r := range rows {
		if r.SLO != nil {
			att = att || r.SLO.Attainment != nil
			gp = gp || r.SLO.GoodputRPS != nil
			sess = sess || r.SLO.SessionAttainment != nil
		}
	}
	opt := func(f func(*SLOFigures) *float64) func(Row) (float64, bool) {
		return func(r Row) (float64, bool) {
			if r.SLO == nil || f(r.SLO) == nil {
				return 0, false
			}
			return *f(r.SLO), true
		}
	}
	if att {
		cols = append(cols, tableColumn{Head: "SLO met", Unit: "requests", get: opt(func(s *SLOFigures) *float64 { return s.Attainment }), format: pct, points: true,
			note: func(r Row) string {
				if r.SLO != nil && r.SLO.OK != nil && !*r.SLO.OK && r.SLO.Target != nil {
					return "below the " + strconv.FormatFloat(100**r.SLO.Target, 'f', -1, 64) + " % target"
				}
				return ""
			}})
	}
	if sess {
		cols = append(cols, tableColumn{Head: "SLO met", Unit: "sessions", get: opt(func(s *SLOFigures) *float64 { return s.SessionAttainment }), format: pct, points: true})
	}
	if anyFaults(rows) {
		fault := func(f func(FaultCounts) int) func(Row) (float64, bool) {
			return func(r Row) (float64, bool) {
				if r.Faults == nil {
					return 0, true
				}
				return float64(f(*r.Faults)), true
			}
		}
		cols = append(cols,
			tableColumn{Head: "faults", get: fault(func(f FaultCounts) int { return f.Events }), format: fmtCount, noDelta: true},
			tableColumn{Head: "retried", get: fault(func(f FaultCounts) int { return f.Retried }), format: fmtCount, noDelta: true},
			tableColumn{Head: "failed_by_faults", get: fault(func(f FaultCounts) int { return f.Failed }), format: fmtCount, noDelta: true})
	}
	if gp {
		cols = append(cols, tableColumn{Head: "goodput", get: opt(func(s *SLOFigures) *float64 { return s.GoodputRPS }),
			format: func(v float64) string {
				if math.Abs(v) < 10 {
					return strconv.FormatFloat(v, 'g', 3, 64) + " req/s" // 0.0404, not 0.04
				}
				return strconv.FormatFloat(v, 'f', 1, 64) + " req/s"
			}})
	}
	return cols
}

// makeTableRows formats a workload's rows with their deltas against its
// baseline. Rows that are not ok get no deltas: their figures cover only
// the requests that ended, and compared as they are they would look
// better than they are.
func makeTableRows(g *workload, cols []tableColumn) []tableRow {
	var base *Row
	if g.Baseline >= 0 {
		base = &g.Rows[g.Baseline]
	}
	out := make([]tableRow, 0, len(g.Rows))
	for i, r := range g.Rows {
		tr := tableRow{Name: splitName(r.Run), Anchor: "run-" + r.Run, Status: r.Status, Detail: r.StatusDetail,
			OK: r.Status == StatusOK, Baseline: i == g.Baseline}
		if r.SLO != nil && r.SLO.Overloaded {
			tr.Overloaded, tr.Verdict = true, r.SLO.Verdict
		}
		for _, c := range cols {
			v, ok := c.get(r)
			if !ok {
				tr.Cells = append(tr.Cells, cell{Value: "–", Title: "not known for this run"})
				continue
			}
			ce := cell{Value: c.format(v), Title: strconv.FormatFloat(v, 'f', -1, 64)}
			if c.note != nil {
				ce.Note = c.note(r)
			}
			switch {
			case c.noDelta:
			case tr.Baseline:
				ce.Delta = "baseline"
			case base != nil && tr.OK:
				if bv, bok := c.get(*base); bok {
					ce.Delta, ce.Class = delta(v, bv, c.points, c.lowerBetter)
				}
			}
			tr.Cells = append(tr.Cells, ce)
		}
		out = append(out, tr)
	}
	return out
}

// delta formats v against the baseline b: per cent, or percentage points
// for shares, with the class saying whether it is an improvement.
func delta(v, b float64, points, lowerBetter bool) (string, string) {
	var d, rel float64
	var s string
	if points {
		d = 100 * (v - b)
		rel = v - b
		s = strconv.FormatFloat(d, 'f', 1, 64) + " pp"
	} else {
		if b == 0 {
			if v == 0 {
				return "±0", ""
			}
			return "new", ""
		}
		rel = (v - b) / math.Abs(b)
		d = 100 * rel
		switch {
		case v != 0 && d <= -90: // a tenth and less: "-100 %" would read as zero
			q := b / v
			if math.Abs(q) >= 100 {
				s = "÷" + strconv.FormatFloat(q, 'f', 0, 64)
			} else {
				s = "÷" + strconv.FormatFloat(q, 'f', 1, 64)
			}
		case d >= 900: // 10× and more
			s = strconv.FormatFloat(v/b, 'f', 0, 64) + "×"
		case d >= 100: // 2× and more: a ratio reads better than "+250 %"
			s = strconv.FormatFloat(v/b, 'f', 1, 64) + "×"
		default:
			s = strconv.FormatFloat(d, 'f', 0, 64) + " %"
		}
	}
	if math.Abs(rel) < deltaFloor {
		return "±0", ""
	}
	if d > 0 && !strings.HasSuffix(s, "×") {
		s = "+" + s
	}
	better := (d < 0) == lowerBetter
	if better {
		return s, "better"
	}
	return s, "worse"
}

// splitName cuts a run name after each "__" so the page may wrap it
// there.
func splitName(name string) []string {
	parts := strings.SplitAfter(name, "__")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// fmtCount formats a count with an SI suffix: "950", "12.3 K", "4.56 M".
func fmtCount(v float64) string { return fmtDecimal(v, "", " K", " M", " G") }

// fmtBytes formats bytes in decimal units: "0 B", "512 B", "3.4 GB".
func fmtBytes(v float64) string { return fmtDecimal(v, " B", " kB", " MB", " GB", " TB") }

// fmtDecimal formats v in steps of 1000: a whole number with units[0]
// below 1000, else three significant digits (trim3) and the unit of its
// power of 1000 (the last unit for all above).
func fmtDecimal(v float64, units ...string) string {
	a := math.Abs(v)
	if a < 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64) + units[0]
	}
	div := 1e3
	for k := 1; ; k++ {
		if k == len(units)-1 || a < div*1000 {
			return trim3(v/div) + units[k]
		}
		div *= 1000
	}
}

// trim3 formats v with three significant digits.
func trim3(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// statusCounts says how many rows are not ok ("" when all are).
func statusCounts(rows []Row) string {
	n := map[string]int{}
	bad := 0
	for _, r := range rows {
		if r.Status != StatusOK {
			n[r.Status]++
			bad++
		}
	}
	if bad == 0 {
		return ""
	}
	var parts []string
	for _, s := range []string{StatusError, StatusPartial, StatusFailed, StatusEmpty} {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	return fmt.Sprintf("%d of %d runs are not clean results (%s): their rows are marked, their figures cover only the requests that ended, and they are not compared with the baseline.",
		bad, len(rows), strings.Join(parts, ", "))
}

// overloadNote names the overloaded runs ("" when none is).
func overloadNote(rows []Row) string {
	var names []string
	for _, r := range rows {
		if r.SLO != nil && r.SLO.Overloaded {
			names = append(names, r.Run)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d runs are overloaded (summary.json's SLO verdict: p99 TTFT far beyond the SLO, or TTFT growing over the run): %s. Their rows say so; each run's section gives the verdict with where the time went.",
		len(names), len(rows), strings.Join(names, ", "))
}

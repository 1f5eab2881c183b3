package report

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
	"strings"
)

// Modes are the request modes, in the order of the table's columns.
var Modes = []string{"Direct", "Seed", "Reseed", "Fallback", "Vanilla", "Fused"}

// Row is one run's line of compare.csv / compare.json.
type Row struct {
	Run      string   `json:"run"`
	Scenario string   `json:"scenario"`
	Policy   string   `json:"policy"`
	Set      []string `json:"set"`
	Seed     uint64   `json:"seed"`
	Trace    string   `json:"trace"`
	// Status is StatusOf the run (ok, failed, partial, error, empty) and
	// StatusDetail its explanation; only ok rows are clean results.
	Status       string `json:"status"`
	StatusDetail string `json:"status_detail,omitempty"`
	// Missing lists the run's absent per-run files (per_request.csv,
	// instances.csv); the figures computed from them are then unknown:
	// empty cells in compare.csv.
	Missing []string `json:"missing_files,omitempty"`

	Requests  int `json:"requests"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// ModeShare is each mode's share of the run's requests.
	ModeShare map[string]float64 `json:"mode_share"`
	TTFT      Percentiles        `json:"ttft_ms"`
	E2E       Percentiles        `json:"e2e_ms"`
	// PrefilledTokens sums per_request.csv's append_tokens (the tokens
	// actually prefilled), CachedTokens its cached_tokens, TransferBytes
	// its transfer_bytes (KV moved between workers).
	PrefilledTokens int64 `json:"prefilled_tokens"`
	CachedTokens    int64 `json:"cached_tokens"`
	TransferBytes   int64 `json:"transfer_bytes"`
	// Imbalance is the largest worker's share of requests over the mean
	// share (1 = perfectly even), over the decode and fused workers (all
	// workers when there are none).
	Imbalance float64 `json:"imbalance"`
	// SLO holds summary.json's SLO attainment and goodput, when it has
	// them (absent from compare.json otherwise).
	SLO *SLOFigures `json:"slo,omitempty"`
	// Faults sums faults.csv; nil (and absent from compare.json) when the
	// run had no faults.
	Faults *FaultCounts `json:"faults,omitempty"`
}

// FaultCounts are a run's faults (rows of faults.csv), the requests they
// hit that were dispatched again (sum of retried) and those that failed
// because the retry budget was spent (sum of failed).
type FaultCounts struct {
	Events  int `json:"events"`
	Retried int `json:"retried"`
	Failed  int `json:"failed"`
}

// Percentiles are p50/p90/p99 in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// Imbalance is max(requests)/mean(requests) over the decode and fused
// workers of s (all workers when there are none); 0 without requests.
func Imbalance(s Summary) float64 {
	var reqs []int
	for _, w := range s.Workers {
		if w.Kind == "decode" || w.Kind == "fused" {
			reqs = append(reqs, w.Requests)
		}
	}
	if len(reqs) == 0 {
		for _, w := range s.Workers {
			reqs = append(reqs, w.Requests)
		}
	}
	sum, mx := 0, 0
	for _, r := range reqs {
		sum += r
		mx = max(mx, r)
	}
	if sum == 0 {
		return 0
	}
	return float64(mx) * float64(len(reqs)) / float64(sum)
}

// imbalanceOf is Imbalance of r's summary, or, when its decode and fused
// workers report no requests there (fused workers do not count them in
// summary.json today), the same ratio over per_request.csv's d_worker
// counts of those workers.
func imbalanceOf(r *Run) float64 {
	if v := Imbalance(r.Summary); v > 0 {
		return v
	}
	counts := map[string]int{}
	for _, w := range r.Summary.Workers {
		if w.Kind == "decode" || w.Kind == "fused" {
			counts[w.Name] = 0
		}
	}
	if len(counts) == 0 || !r.Requests.Has("d_worker") {
		return 0
	}
	total, mx := 0, 0
	for i := range r.Requests.Rows {
		w := r.Requests.Str(i, "d_worker")
		if _, ok := counts[w]; ok {
			counts[w]++
			total++
			mx = max(mx, counts[w])
		}
	}
	if total == 0 {
		return 0
	}
	return float64(mx) * float64(len(counts)) / float64(total)
}

// MakeRow computes r's table row from its summary and per_request.csv.
func MakeRow(r *Run) (Row, error) {
	s := r.Summary
	row := Row{
		Run: r.Name, Scenario: s.Scenario, Policy: s.Policy, Seed: s.Seed, Set: []string{},
		Requests: s.Requests.Total, Completed: s.Requests.Completed, Failed: s.Requests.Failed,
		ModeShare: map[string]float64{},
		TTFT:      Percentiles{s.TTFT.P50, s.TTFT.P90, s.TTFT.P99},
		E2E:       Percentiles{s.E2E.P50, s.E2E.P90, s.E2E.P99},
		Imbalance: round(imbalanceOf(r), 4),
		Missing:   r.Missing,
	}
	st := StatusOf(s)
	row.Status, row.StatusDetail = st.Code, st.Detail
	if f := sloOf(s); f.any() {
		row.SLO = &f
	}
	if p := r.Params; p != nil {
		row.Set = append(row.Set, p.Set...)
		row.Trace = p.Trace
	}
	for _, m := range Modes {
		share := 0.0
		if s.Requests.Total > 0 {
			share = float64(s.Modes[m]) / float64(s.Requests.Total)
		}
		row.ModeShare[m] = round(share, 4)
	}
	if t := r.Requests; t != nil {
		for _, c := range []struct {
			col string
			dst *int64
		}{{"append_tokens", &row.PrefilledTokens}, {"cached_tokens", &row.CachedTokens}, {"transfer_bytes", &row.TransferBytes}} {
			vs, err := column(t, c.col)
			if err != nil {
				return Row{}, err
			}
			for _, v := range vs {
				*c.dst += int64(v)
			}
		}
	}
	fc, err := faultCounts(r)
	if err != nil {
		return Row{}, err
	}
	row.Faults = fc
	return row, nil
}

// MakeRows computes the rows of runs, in order.
func MakeRows(runs []*Run) ([]Row, error) { return mapAll(runs, MakeRow) }

func round(v float64, digits int) float64 {
	s := strconv.FormatFloat(v, 'f', digits, 64)
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// CSVHeader is compare.csv's header for runs without faults or SLO
// figures.
func CSVHeader() []string { return csvHeader(false, false) }

// SLOColumns are the columns compare.csv has after imbalance when any of
// its runs' summary.json has SLO figures (empty cells for the others).
var SLOColumns = []string{"slo_attainment", "goodput_rps", "session_slo_attainment", "slo_target", "slo_ok", "overloaded"}

func anySLO(rows []Row) bool {
	for _, r := range rows {
		if r.SLO != nil {
			return true
		}
	}
	return false
}

func hasFile(r Row, name string) bool {
	for _, m := range r.Missing {
		if m == name {
			return false
		}
	}
	return true
}

// FaultColumns are the columns compare.csv ends with when any of its runs
// had faults (0 for the runs without).
var FaultColumns = []string{"faults", "retried", "failed_by_faults"}

func anyFaults(rows []Row) bool {
	for _, r := range rows {
		if r.Faults != nil {
			return true
		}
	}
	return false
}

func csvHeader(faults, slo bool) []string {
	h := []string{"run", "scenario", "policy", "set", "seed", "trace", "status", "requests", "completed", "failed"}
	for _, m := range Modes {
		h = append(h, strings.ToLower(m)+"_share")
	}
	h = append(h, "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "e2e_p50_ms", "e2e_p90_ms", "e2e_p99_ms",
		"prefilled_tokens", "cached_tokens", "transfer_bytes", "imbalance")
	if slo {
		h = append(h, SLOColumns...)
	}
	if faults {
		h = append(h, FaultColumns...)
	}
	return h
}

// WriteCSV writes rows as compare.csv (set values joined with ";"), with
// SLOColumns when any run has SLO figures and FaultColumns at the end
// when any run had faults. Figures a run's missing files would give are
// empty cells.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	faults, slo := anyFaults(rows), anySLO(rows)
	if err := cw.Write(csvHeader(faults, slo)); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write(csvRecord(r, faults, slo)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvRecord(r Row, faults, slo bool) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	rec := []string{r.Run, r.Scenario, r.Policy, strings.Join(r.Set, ";"), strconv.FormatUint(r.Seed, 10), r.Trace, r.Status,
		strconv.Itoa(r.Requests), strconv.Itoa(r.Completed), strconv.Itoa(r.Failed)}
	for _, m := range Modes {
		rec = append(rec, f(r.ModeShare[m]))
	}
	rec = append(rec, f(r.TTFT.P50), f(r.TTFT.P90), f(r.TTFT.P99), f(r.E2E.P50), f(r.E2E.P90), f(r.E2E.P99))
	if hasFile(r, "per_request.csv") {
		rec = append(rec, strconv.FormatInt(r.PrefilledTokens, 10), strconv.FormatInt(r.CachedTokens, 10),
			strconv.FormatInt(r.TransferBytes, 10))
	} else {
		rec = append(rec, "", "", "")
	}
	rec = append(rec, f(r.Imbalance))
	if slo {
		opt := func(p *float64) string {
			if p == nil {
				return ""
			}
			return f(round(*p, 4))
		}
		if r.SLO == nil {
			rec = append(rec, "", "", "", "", "", "")
		} else {
			ok := ""
			if r.SLO.OK != nil {
				ok = strconv.FormatBool(*r.SLO.OK)
			}
			rec = append(rec, opt(r.SLO.Attainment), opt(r.SLO.GoodputRPS), opt(r.SLO.SessionAttainment),
				opt(r.SLO.Target), ok, strconv.FormatBool(r.SLO.Overloaded))
		}
	}
	if faults {
		fc := FaultCounts{}
		if r.Faults != nil {
			fc = *r.Faults
		}
		rec = append(rec, strconv.Itoa(fc.Events), strconv.Itoa(fc.Retried), strconv.Itoa(fc.Failed))
	}
	return rec
}

// WriteJSON writes rows as compare.json (an indented array).
func WriteJSON(w io.Writer, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

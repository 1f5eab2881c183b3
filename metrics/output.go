package metrics

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/pdemu/pdemu/internal/appendnum"
)

func fms(d time.Duration) string {
	if d < 0 {
		return ""
	}
	return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64)
}

// WriteRoutingLog writes routing_log.jsonl: the routing decision of every
// request of a bucketed run, in request id order.
func WriteRoutingLog(w io.Writer, recs []Record) error {
	for _, r := range recs {
		if len(r.RouteLog) == 0 {
			continue
		}
		if _, err := w.Write(r.RouteLog); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	return nil
}

// InstancesHeader is the header of instances.csv.
var InstancesHeader = []string{"t_ms", "worker", "kind", "bucket", "kv_tokens", "queue", "running", "cap_kv_tokens"}

// WriteInstances writes instances.csv: every series resampled every
// interval from 0 to end inclusive, rows ordered by time then worker.
// caps gives each worker's KV capacity in tokens by name (its
// cap_kv_tokens column; empty when unknown or 0). Callers bound the rows
// with InstancesPlan.
func WriteInstances(w io.Writer, series []*Series, interval, end time.Duration, caps map[string]int) error {
	if err := writeHeader(w, InstancesHeader); err != nil {
		return err
	}
	// Rows are appended, not csv.Writer'd: the string columns are encoded
	// once per series (csvSeg, as csv.Writer quotes them), the numbers
	// never need quotes.
	mid, capOf := make([]string, len(series)), make([]string, len(series))
	for i, s := range series {
		mid[i] = csvSeg(s.Worker, s.Kind, s.Bucket)
		if c := caps[s.Worker]; c > 0 {
			capOf[i] = strconv.Itoa(c)
		}
	}
	if interval <= 0 {
		interval = time.Second
	}
	cur := make([]*seriesCursor, len(series)) // the times only grow: no search
	for i, s := range series {
		cur[i] = s.cursor()
	}
	rb := newRowBuf(w)
	var tms []byte // the sample's t_ms, formatted once for its rows
	for k, n := int64(0), samples(interval, end); k < n; k++ {
		t := sampleAt(k, interval)
		tms = appendFMS(tms[:0], t)
		for i := range series {
			p := cur[i].at(t)
			b := append(rb.b, tms...)
			b = append(b, ',')
			b = append(b, mid[i]...)
			b = append(b, ',')
			b = appendnum.Int(b, int64(p.KV))
			b = append(b, ',')
			b = appendnum.Int(b, int64(p.Queue))
			b = append(b, ',')
			b = appendnum.Int(b, int64(p.Running))
			b = append(b, ',')
			rb.b = append(b, capOf[i]...)
			if err := rb.row(); err != nil {
				return err
			}
		}
	}
	return rb.flush()
}

// writeCSV writes a CSV file: header, then the records rows writes to cw.
func writeCSV(w io.Writer, header []string, rows func(cw *csv.Writer) error) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := rows(cw); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// Summary is summary.json. Keys documented in the README are stable.
type Summary struct {
	SchemaVersion  int               `json:"schema_version"`
	PdemuVersion   string            `json:"pdemu_version"`
	ScenarioDigest string            `json:"scenario_digest"` // Digest of the scenario's HCL bytes (filled by the caller)
	Vars           map[string]string `json:"vars"`            // --var values (filled by the caller)
	Trace          TraceInfo         `json:"trace"`           // replayed trace (filled by the caller)
	// Partial: the run was stopped (StoppedBy) before every request ended.
	Partial   bool   `json:"partial"`
	StoppedBy string `json:"stopped_by"`
	// Error says why a run failed (a lost request, a bad record, a node
	// error; absent when it did not): an unsuccessful run never looks
	// clean. MissingIDs are the first MaxMissingIDs ids of the requests
	// that did not end (unfinished or lost; absent when none).
	Error      string  `json:"error,omitempty"`
	MissingIDs []int64 `json:"missing_ids,omitempty"`

	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	Seed     uint64 `json:"seed"`
	Clock    Clock  `json:"clock"`
	// Served: pdemu serve only, how late clients got their responses.
	Served   *ServedLateness `json:"served,omitempty"`
	Requests Counts          `json:"requests"`
	TTFT     Quantiles       `json:"ttft_ms"`
	E2E      Quantiles       `json:"e2e_ms"`
	Modes    map[string]int  `json:"modes"`
	// PrefillShare is the fraction of completed requests that used a
	// prefill worker (the KVC paper's "P used on ≈ 8 %").
	PrefillShare    float64         `json:"prefill_share"`
	EmulatedSeconds float64         `json:"emulated_seconds"`
	Runtime         Runtime         `json:"runtime"`
	Workers         []WorkerSummary `json:"workers"`
	// Router holds KVC-Router totals (absent for other policies).
	Router *RouterTotals `json:"router,omitempty"`
	// PerBucket breaks a bucketed run down by bucket (sorted by name).
	PerBucket []BucketSummary `json:"per_bucket,omitempty"`
	// Faults sums faults.csv (absent without faults).
	Faults *FaultSummary `json:"faults,omitempty"`

	// SLO is the run's SLO attainment, goodput and overload verdict
	// (metrics/slo.go; absent when no SLO was given).
	SLO *SLOSummary `json:"slo,omitempty"`

	// Estimates: present when the quantiles are estimates (a bounded
	// summary past BoundExact requests: pdemu serve; bounded.go).
	Estimates *Estimates `json:"estimates,omitempty"`

	TTFTParts  PartsSummary `json:"ttft_parts_ms"`
	TTFTTail   TailParts    `json:"ttft_tail"`
	TPOT       Tail         `json:"tpot_ms"`
	Throughput Throughput   `json:"throughput"`
	Balance    []Balance    `json:"balance"`
	Outputs    OutputInfo   `json:"outputs"`
	Warnings   []string     `json:"warnings"`
}

// BucketSummary is one bucket's share of a bucketed run.
type BucketSummary struct {
	Bucket            string    `json:"bucket"`
	Requests          Counts    `json:"requests"`
	TTFT              Quantiles `json:"ttft_ms"`
	E2E               Quantiles `json:"e2e_ms"`
	LengthBucketMatch float64   `json:"length_bucket_match"` // fraction of its requests whose length is in its range
	CachedTokenShare  float64   `json:"cached_token_share"`  // cached prompt tokens / prompt tokens
}

// RouterTotals sums the per-session KVC counters of sessions.csv.
type RouterTotals struct {
	Migrations           int `json:"migrations"`
	MaxSessionMigrations int `json:"max_session_migrations"`
	Blacklists           int `json:"blacklists"`
	Fallbacks            int `json:"fallbacks"`
	Rejections           int `json:"rejections"`
	// SessionsForgotten: sessions the router forgot (idle; pdemu serve):
	// their counters are in the totals above, not in sessions.csv.
	SessionsForgotten int `json:"sessions_forgotten,omitempty"`
}

// Clock describes the clock of the run.
type Clock struct {
	Mode      string    `json:"mode"`
	TimeScale float64   `json:"time_scale"`
	Lateness  *Lateness `json:"lateness_ms,omitempty"`
	// Wall clock only: the lateness of deliveries in emulated time, the
	// share of real time the process was saturated, and the verdict.
	EmulatedLateness *Lateness `json:"emulated_lateness_ms,omitempty"`
	SaturatedShare   *float64  `json:"saturated_share,omitempty"`
	Fidelity         string    `json:"fidelity,omitempty"`
	FidelityBound    string    `json:"fidelity_bound,omitempty"`
}

// Lateness is the wall clock's timer lateness in real milliseconds.
type Lateness struct {
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
	Samples int     `json:"samples"`
}

// Counts are the request totals; Total == Completed + Failed + Aborted.
type Counts struct {
	Total       int            `json:"total"`
	Completed   int            `json:"completed"`
	Failed      int            `json:"failed"`
	Aborted     int            `json:"aborted,omitempty"` // served runs: left when their client went away (not failures)
	FailReasons map[string]int `json:"fail_reasons"`
	SkippedBad  int            `json:"skipped_bad_records"`
	FailedShare float64        `json:"failed_share"` // failed / total (0 when total is 0)
	Unfinished  int            `json:"unfinished"`   // partial runs: requests still in the cluster, not in total
}

// Runtime reports the actor runtime's health.
type Runtime struct {
	DeadLetters int64 `json:"dead_letters"`
	Panics      int64 `json:"panics"`
	Steps       int64 `json:"clock_steps,omitempty"`
	Messages    int64 `json:"messages,omitempty"`
}

// WorkerSummary reports a worker's KV high-water mark.
type WorkerSummary struct {
	Name     string  `json:"name"`
	Kind     string  `json:"kind"`
	Bucket   string  `json:"bucket,omitempty"`
	MaxKV    int     `json:"max_kv_tokens"`
	CapKV    int     `json:"cap_kv_tokens,omitempty"`
	Requests int     `json:"requests"`
	Share    float64 `json:"request_share"` // of the requests its kind of worker served
}

// Summarize fills the request-derived fields of a Summary.
func Summarize(recs []Record) Summary {
	var s Summary
	var ttft, e2e []time.Duration
	s.Requests.FailReasons = map[string]int{}
	var end time.Duration
	usedP := 0
	for _, r := range recs {
		if r.State == StateUnfinished {
			s.Requests.Unfinished++
			continue
		}
		s.Requests.Total++
		if r.State == StateAborted {
			s.Requests.Aborted++
			continue
		}
		if r.Failed {
			s.Requests.Failed++
			s.Requests.FailReasons[r.Reason]++
			continue
		}
		s.Requests.Completed++
		ttft = append(ttft, r.TTFT)
		e2e = append(e2e, r.E2E)
		end = max(end, r.Arrival+r.E2E)
		if r.P != "" {
			usedP++
		}
	}
	s.TTFT = QuantilesMS(ttft)
	s.E2E = QuantilesMS(e2e)
	s.Modes = ModeCounts(recs)
	if s.Requests.Completed > 0 {
		s.PrefillShare = round3(float64(usedP) / float64(s.Requests.Completed))
	}
	s.EmulatedSeconds = round3(end.Seconds())
	if s.Requests.Total > 0 {
		s.Requests.FailedShare = math.Round(float64(s.Requests.Failed)/float64(s.Requests.Total)*1e4) / 1e4
	}
	s.SchemaVersion = SchemaVersion
	s.Vars = map[string]string{}
	explain(&s, recs)
	s.Warnings = Warnings(s)
	return s
}

// SummarizeBuckets breaks records down by bucket; nil when no record has
// one. Requests that failed before a bucket was chosen are under "".
func SummarizeBuckets(recs []Record) []BucketSummary {
	bucketed := false
	for i := range recs {
		if recs[i].Bucket != "" || recs[i].BucketPolicy != "" {
			bucketed = true
			break
		}
	}
	if !bucketed {
		return nil
	}
	by := map[string][]Record{}
	for _, r := range recs {
		by[r.Bucket] = append(by[r.Bucket], r)
	}
	names := slices.Sorted(maps.Keys(by))
	out := make([]BucketSummary, 0, len(names))
	for _, n := range names {
		rs := by[n]
		s := Summarize(rs)
		b := BucketSummary{Bucket: n, Requests: s.Requests, TTFT: s.TTFT, E2E: s.E2E}
		match, cached, prompt := 0, 0, 0
		for _, r := range rs {
			if r.LengthBucketMatch {
				match++
			}
			cached += r.CachedTokens
			prompt += r.InputTokens
		}
		b.LengthBucketMatch = round3(float64(match) / float64(len(rs)))
		if prompt > 0 {
			b.CachedTokenShare = round3(float64(cached) / float64(prompt))
		}
		out = append(out, b)
	}
	return out
}

// LatenessOf summarises lateness samples (sorted ascending).
func LatenessOf(sorted []time.Duration) *Lateness {
	l := &Lateness{Samples: len(sorted)}
	if len(sorted) == 0 {
		return l
	}
	q := QuantilesMS(sorted)
	l.P50, l.P99, l.Max = q.P50, q.P99, q.Max
	return l
}

// WriteSummary writes summary.json (indented, keys in struct order, maps sorted).
func WriteSummary(w io.Writer, s Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// SessionRow is one row of sessions.csv (KVC-Router runs).
type SessionRow struct {
	Session    string
	Requests   int
	Direct     int
	Migrations int
	Blacklists int
	Fallbacks  int
	Rejections int
}

// WriteSessions writes sessions.csv in the given order.
func WriteSessions(w io.Writer, rows []SessionRow) error {
	if err := writeHeader(w, sessionsHeader); err != nil {
		return err
	}
	rb := newRowBuf(w)
	for _, r := range rows {
		b := appendCSVField(rb.b, r.Session)
		for _, n := range [...]int{r.Requests, r.Direct, r.Migrations, r.Blacklists, r.Fallbacks, r.Rejections} {
			b = appendnum.Int(append(b, ','), int64(n))
		}
		rb.b = b
		if err := rb.row(); err != nil {
			return err
		}
	}
	return rb.flush()
}

var sessionsHeader = []string{"session", "requests", "direct", "migrations", "blacklists", "fallbacks", "rejections"}

// ServedLateness is how late, in wall milliseconds, the clients of a
// served run got each request's first token and its end compared with
// the emulated times they happened (scaled to wall time): what a client
// sees of the emulator falling behind. Bound and Late are the verdict:
// Late when the first tokens' p99 passed Bound. Client summarises
// per_request.csv's client_late_ms (ClientTimes.Late; nil when no client
// got an answer).
type ServedLateness struct {
	FirstToken Lateness        `json:"first_token_late_ms"`
	End        Lateness        `json:"end_late_ms"`
	Client     *ClientLateness `json:"client_late_ms,omitempty"`
	BoundMS    float64         `json:"bound_ms"`
	Late       bool            `json:"late"`
}

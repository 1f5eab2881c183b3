// Package metrics turns finished jobs and worker observations into pdemu's
// outputs: per_request.csv, instances.csv and summary.json.
//
// Contract: the Collector accepts each request exactly once (a second end
// of the same request is an error, never silently merged); every output is
// a pure function of what was collected, written in a fixed order, so
// virtual-clock runs with the same inputs produce byte-identical files.
//
// docs/CONTRIBUTING.md has the recipe for adding an output column: the files to
// touch, in order, and the test that proves it.
package metrics

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/internal/idmap"
	"github.com/pdemu/pdemu/policy"
)

// Record is one row of per_request.csv.
type Record struct {
	ID            int64
	Session       string
	SessionIdx    int32
	Turn          int
	Arrival       time.Duration
	TTFT          time.Duration // -1 when the request failed before its first token
	E2E           time.Duration // -1 when the request failed
	Mode          string
	Reason        string // failure reason, else the admission rejections joined by ';'
	Failed        bool
	P, D          string
	InputTokens   int
	OutputTokens  int
	AppendTokens  int // tokens prefilled for this request (append-prefill or uncached prefill)
	CachedTokens  int
	TransferBytes int64
	Tries         int
	KVCause       string // why a Seed/Reseed/Fallback had no resident KV (gpu.Job.KVCause)

	// Bucketed deployments ("" / false / 0 otherwise).
	Bucket                string
	BucketPolicy          string
	LengthBucketMatch     bool
	BucketPredictedPrefix int
	RouteLog              []byte // routing_log.jsonl line

	// State is completed, failed or unfinished (a request still in the
	// cluster when a partial run stopped; see Summary.Partial).
	State string
	// Parts split the TTFT (valid when HasParts): their sum is TTFT
	// exactly, in nanoseconds. TPOT is -1 when undefined.
	Parts    TTFTParts
	HasParts bool
	TPOT     time.Duration
}

// Request states (per_request.csv state column).
const (
	StateCompleted = "completed"
	StateFailed    = "failed"
	// StateAborted: the client went away and the request left the cluster
	// (pdemu serve; gpu.ReasonAborted). Not a failure of the cluster: it
	// counts in Counts.Aborted, not Failed.
	StateAborted    = "aborted"
	StateUnfinished = "unfinished"
)

// Collector accumulates finished jobs: it keeps their records, or (after
// Stream) hands each to a sink and tallies what the summary needs.
type Collector struct {
	prefillNames, decodeNames []string
	seen                      idSet
	reasons                   Interner // the reason column's lists
	recs                      []Record
	ended, failed             int

	sink     func(Record) error // nil: keep the records
	routeLog func(int64) []byte
	tally    *Tally
	mark     releaseMark // the arrival watermark of a streaming run with faults (recovery.go)
}

// NewCollector names workers by index for the records.
func NewCollector(prefillNames, decodeNames []string) *Collector {
	return &Collector{prefillNames: prefillNames, decodeNames: decodeNames}
}

// Stream makes the collector hand each record to sink as its request
// ends (in end order) instead of keeping it, and tally it (Tally; with
// the times of the run's faults, see NewTally: the tally then judges
// their recovery windows as the arrival watermark passes them, from the
// jobs' release order, gpu.Job.Released). routeLog, when set, supplies
// the routing_log.jsonl line of a record whose job carries none (the P/D
// router's, which it then forgets). Call it before the first Add.
func (c *Collector) Stream(sink func(Record) error, routeLog func(int64) []byte, faultsAt []time.Duration) {
	c.sink, c.routeLog, c.tally = sink, routeLog, NewTally(faultsAt...)
}

// Forget drops session s's counts from the tally (a bounded streaming
// collector's: Tally.Forget; otherwise nothing).
func (c *Collector) Forget(s int32) {
	if c.tally != nil {
		c.tally.Forget(s)
	}
}

// Tally is the streaming collector's tally (nil unless Stream was called).
func (c *Collector) Tally() *Tally { return c.tally }

func name(names []string, i int) string {
	if i < 0 || i >= len(names) {
		return ""
	}
	return names[i]
}

// Add records a finished job; a request that ends twice is an error.
func (c *Collector) Add(j *gpu.Job) error {
	r := j.Req
	if c.seen.has(r.ID) {
		return fmt.Errorf("metrics: request %d (session %s turn %d) ended twice", r.ID, r.SessionName, r.Turn)
	}
	c.seen.add(r.ID)
	c.ended++
	rec := c.record(j)
	rec.State, rec.Failed = StateCompleted, j.Failed != ""
	if rec.Failed {
		rec.State = StateFailed
		rec.Reason = j.Failed
		if j.Failed == gpu.ReasonAborted {
			// How long it stayed before it left.
			rec.State, rec.E2E = StateAborted, j.Done-j.Arrival
		} else {
			c.failed++
		}
		if j.FirstToken > 0 {
			rec.TTFT = j.FirstToken - j.Arrival
		}
	} else {
		rec.TTFT = j.FirstToken - j.Arrival
		rec.E2E = j.Done - j.Arrival
		rec.Reason = c.reasons.Reasons(j.RetryReasons, j.Reasons) // JoinReasons: attempts lost to faults first
		if r.OutputLen > 1 {
			rec.TPOT = (j.Done - j.FirstToken) / time.Duration(r.OutputLen-1)
		}
	}
	if rec.TTFT >= 0 {
		rec.Parts, rec.HasParts = SplitTTFT(j), true
	}
	if c.sink == nil {
		c.recs = append(c.recs, rec)
		return nil
	}
	if len(rec.RouteLog) == 0 && c.routeLog != nil {
		rec.RouteLog = c.routeLog(rec.ID)
	}
	c.tally.Add(&rec)
	if c.tally.TracksFaults() && c.mark.end(j.Released, j.Arrival) {
		c.tally.Watermark(c.mark.at)
	}
	return c.sink(rec)
}

// Unfinished describes a job still in the cluster when a partial run
// stopped (Result.Unfinished): State "unfinished", no e2e, the TTFT (and
// its parts) only if its first token came. It is not recorded as ended.
func (c *Collector) Unfinished(j *gpu.Job) Record {
	rec := c.record(j)
	rec.State, rec.Reason = StateUnfinished, unfinishedReason(j)
	if j.FirstToken > 0 {
		rec.TTFT = j.FirstToken - j.Arrival
		rec.Parts, rec.HasParts = SplitTTFT(j), true
	}
	return rec
}

// record is the one Job → Record mapping of Add and Unfinished: every
// field the job carries, whatever its end (State, Failed, Reason, TTFT,
// E2E and TPOT are the caller's).
func (c *Collector) record(j *gpu.Job) Record {
	r := j.Req
	rec := Record{
		TPOT: -1, TTFT: -1, E2E: -1,
		ID: r.ID, Session: r.SessionName, SessionIdx: r.Session, Turn: r.Turn, Arrival: j.Arrival,
		Mode: j.Mode.String(), P: name(c.prefillNames, j.P), D: name(c.decodeNames, j.D),
		InputTokens: r.InputLen, OutputTokens: r.OutputLen,
		AppendTokens: j.PrefillTokens, CachedTokens: j.CachedTokens,
		TransferBytes: j.TransferBytes, Tries: j.Tries, KVCause: j.KVCause,
		Bucket: j.Bucket, BucketPolicy: j.BucketPolicy, LengthBucketMatch: j.LengthBucketMatch,
		BucketPredictedPrefix: j.BucketPredictedPrefix, RouteLog: j.RouteLog,
	}
	if !j.Mode.UsesPrefill() {
		rec.P = ""
	}
	return rec
}

// Ended is the number of requests recorded; Failed how many failed.
func (c *Collector) Ended() int  { return c.ended }
func (c *Collector) Failed() int { return c.failed }

// Seen reports whether request id ended.
func (c *Collector) Seen(id int64) bool { return c.seen.has(id) }

// idSet is a set of request ids: those below low, and those in above.
// Request ids are dense from 0 (workload.Request) and requests end
// roughly in id order, so above holds the ids that ended before a lower
// one: its size is the run's disorder, not its length.
type idSet struct {
	low   int64
	above idmap.Window[struct{}]
}

func (s *idSet) has(id int64) bool {
	if id >= 0 && id < s.low {
		return true
	}
	_, ok := s.above.Get(id)
	return ok
}

func (s *idSet) add(id int64) {
	if id != s.low {
		s.above.Put(id, struct{}{})
		return
	}
	s.low++
	for s.above.Len() > 0 {
		if _, ok := s.above.Get(s.low); !ok {
			break
		}
		s.above.Delete(s.low)
		s.low++
	}
}

// Records returns the records sorted by request id (none after Stream).
func (c *Collector) Records() []Record {
	out := append([]Record(nil), c.recs...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Sample is one observation of a worker.
type Sample struct {
	T       time.Duration
	KV      int // KV tokens used (decode) or prefix cache tokens (prefill)
	Queue   int
	Running int
}

// Quantiles summarises a distribution in milliseconds.
type Quantiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// QuantilesMS computes nearest-rank quantiles of ds in milliseconds.
func QuantilesMS(ds []time.Duration) Quantiles { return quantilesInPlace(slices.Clone(ds)) }

// quantilesInPlace is QuantilesMS of s, which it sorts (no copy: for a
// caller's own scratch slice): tailInPlace's figures without its extra
// tail quantiles.
func quantilesInPlace(s []time.Duration) Quantiles {
	t := tailInPlace(s)
	return Quantiles{P50: t.P50, P90: t.P90, P99: t.P99, Mean: t.Mean, Max: t.Max}
}

func ms(d time.Duration) float64 { return round3(float64(d) / 1e6) }

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// ModeCounts counts finished requests per mode name; every mode is present.
func ModeCounts(recs []Record) map[string]int {
	m := map[string]int{}
	for _, md := range policy.AllModes {
		m[md.String()] = 0
	}
	for _, r := range recs {
		if !r.Failed {
			m[r.Mode]++
		}
	}
	return m
}

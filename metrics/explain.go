package metrics

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pdemu/pdemu/internal/buildinfo"
	"github.com/pdemu/pdemu/internal/regular"
)

// SchemaVersion is the version of the output files' schema
// (docs/OUTPUTS.md). It changes when a key or column changes meaning or
// goes away; new keys and columns do not change it.
const SchemaVersion = 2

// Imbalance thresholds (docs/OUTPUTS.md, "workers"): a kind of worker is
// reported imbalanced when its busiest worker serves more than
// ImbalanceWarn times the mean share, or its least busy one less than
// IdleWarn times it, provided the kind has at least two workers and
// MinBalanceRequests requests per worker.
const (
	ImbalanceWarn      = 1.5
	IdleWarn           = 0.25
	MinBalanceRequests = 10
)

// Tail summarises a distribution in milliseconds, tail quantiles included
// (nearest rank).
type Tail struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// TailMS computes Tail of ds (unsorted) in milliseconds.
func TailMS(ds []time.Duration) Tail { return tailInPlace(slices.Clone(ds)) }

// tailInPlace is TailMS of s, which it sorts (no copy).
func tailInPlace(s []time.Duration) Tail {
	if len(s) == 0 {
		return Tail{}
	}
	sortDurations(s)
	var sum float64
	for _, d := range s {
		sum += float64(d)
	}
	q := func(p float64) float64 { return ms(s[rank(p, len(s))]) }
	return Tail{P50: q(0.50), P90: q(0.90), P95: q(0.95), P99: q(0.99), P999: q(0.999),
		Mean: round3(sum / float64(len(s)) / 1e6), Max: ms(s[len(s)-1])}
}

// rank is the nearest-rank index of quantile p among n sorted values.
func rank(p float64, n int) int {
	i := int(math.Ceil(p*float64(n))) - 1
	return min(max(i, 0), n-1)
}

// PartsSummary is summary.json ttft_parts_ms: one Tail per TTFT part.
type PartsSummary struct {
	Route      Tail `json:"route"`
	PQueue     Tail `json:"p_queue"`
	Prefill    Tail `json:"prefill"`
	Transfer   Tail `json:"transfer"`
	KVWait     Tail `json:"kv_wait"`
	DPrefill   Tail `json:"d_prefill"`
	FirstToken Tail `json:"first_token"`
}

// TailParts is summary.json ttft_tail: what the slowest requests' TTFT was
// made of. Requests are the completed requests whose TTFT is at or above
// the TTFT p99; the parts are their means in milliseconds; Dominant is the
// largest part.
type TailParts struct {
	Threshold float64            `json:"ttft_at_least_ms"`
	Requests  int                `json:"requests"`
	MeanMS    map[string]float64 `json:"mean_parts_ms"`
	Dominant  string             `json:"dominant"`
}

// Throughput is token throughput per emulated second of the run
// (completed requests over emulated_seconds).
type Throughput struct {
	PromptTokensPerS    float64 `json:"prompt_tokens_per_s"`
	GeneratedTokensPerS float64 `json:"generated_tokens_per_s"`
}

// Balance is how evenly one kind of worker shared the requests.
type Balance struct {
	Kind      string  `json:"kind"`
	Workers   int     `json:"workers"`
	Requests  int     `json:"requests"`
	MaxShare  float64 `json:"max_share"`
	MinShare  float64 `json:"min_share"`
	Imbalance float64 `json:"imbalance"` // max share / mean share (1 = even)
	Busiest   string  `json:"busiest"`
	Warn      bool    `json:"warn"`
}

// TraceInfo names the replayed trace ("" for a generated workload).
type TraceInfo struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
	// Warnings are the trace loader's (workload.Warner): what was replayed
	// differently from what the trace says.
	Warnings []string `json:"warnings,omitempty"`
}

// OutputInfo says how the bounded outputs were sampled.
type OutputInfo struct {
	InstancesIntervalMS float64 `json:"instances_interval_ms"`
	InstancesRows       int     `json:"instances_rows"`
	InstancesWidened    bool    `json:"instances_interval_widened"`
	LinksRows           int     `json:"links_rows"`
	LinksDropped        int     `json:"links_rows_dropped"`
	RouterWindowMS      float64 `json:"router_window_ms"`
	// Written lists the files written when --outputs chose a subset
	// (absent: every file was written).
	Written []string `json:"written,omitempty"`
}

// explain fills the per-part, tail and throughput fields of s from recs.
func explain(s *Summary, recs []Record) {
	parts := make([][]time.Duration, len(TTFTPartNames))
	var tpot []time.Duration
	var prompt, gen int64
	for i := range recs {
		r := &recs[i]
		if r.Failed || r.State == StateUnfinished {
			continue
		}
		prompt += int64(r.InputTokens)
		gen += int64(r.OutputTokens)
		if r.TPOT >= 0 {
			tpot = append(tpot, r.TPOT)
		}
		if r.HasParts {
			for k, d := range r.Parts.Slice() {
				parts[k] = append(parts[k], d)
			}
		}
	}
	s.TTFTParts = PartsSummary{Route: TailMS(parts[0]), PQueue: TailMS(parts[1]), Prefill: TailMS(parts[2]),
		Transfer: TailMS(parts[3]), KVWait: TailMS(parts[4]), DPrefill: TailMS(parts[5]), FirstToken: TailMS(parts[6])}
	s.TPOT = TailMS(tpot)
	if s.EmulatedSeconds > 0 {
		s.Throughput.PromptTokensPerS = round3(float64(prompt) / s.EmulatedSeconds)
		s.Throughput.GeneratedTokensPerS = round3(float64(gen) / s.EmulatedSeconds)
	}
	s.TTFTTail = tailParts(recs, s.TTFT.P99)
}

func tailParts(recs []Record, p99 float64) TailParts {
	t := TailParts{Threshold: p99, MeanMS: map[string]float64{}}
	sums := make([]time.Duration, len(TTFTPartNames))
	for i := range recs {
		r := &recs[i]
		if r.Failed || !r.HasParts || r.State == StateUnfinished || ms(r.TTFT) < p99 {
			continue
		}
		t.Requests++
		for k, d := range r.Parts.Slice() {
			sums[k] += d
		}
	}
	t.setMeans(sums)
	return t
}

// setMeans sets MeanMS from sums, the parts' totals over t.Requests
// requests, and Dominant, the largest mean (none without requests).
func (t *TailParts) setMeans(sums []time.Duration) {
	best := -1.0
	for k, n := range TTFTPartNames {
		m := 0.0
		if t.Requests > 0 {
			m = round3(float64(sums[k]) / float64(t.Requests) / 1e6)
		}
		t.MeanMS[n] = m
		if t.Requests > 0 && m > best {
			best, t.Dominant = m, n
		}
	}
}

// AttachWorkers sets each worker's request count and share from the
// records (a prefill worker counts the requests it prefilled; a decode or
// fused worker those it served, failed ones included), computes the
// balance of each kind of worker, and stores workers in s. It replaces the
// counting the actors used to do (which missed fused workers).
func AttachWorkers(s *Summary, workers []WorkerSummary, recs []Record) {
	pCount, dCount := map[string]int{}, map[string]int{}
	for i := range recs {
		r := &recs[i]
		if r.P != "" {
			pCount[r.P]++
		}
		if r.D != "" {
			dCount[r.D]++
		}
	}
	attachWorkers(s, workers, pCount, dCount)
}

// attachWorkers is AttachWorkers given the records' counts of prefill
// worker names (pCount) and decode or fused worker names (dCount).
func attachWorkers(s *Summary, workers []WorkerSummary, pCount, dCount map[string]int) {
	idx := map[string]int{} // kind/name -> index
	for i := range workers {
		workers[i].Requests = 0
		idx[workers[i].Kind+"/"+workers[i].Name] = i
	}
	for p, c := range pCount {
		if k, ok := idx["prefill/"+p]; ok {
			workers[k].Requests += c
		}
	}
	for d, c := range dCount {
		if k, ok := idx["decode/"+d]; ok {
			workers[k].Requests += c
		} else if k, ok := idx["fused/"+d]; ok {
			workers[k].Requests += c
		}
	}
	s.Workers = workers
	s.Balance = nil
	var kinds []string
	total := map[string]int{}
	n := map[string]int{}
	for _, w := range workers {
		if n[w.Kind] == 0 {
			kinds = append(kinds, w.Kind)
		}
		n[w.Kind]++
		total[w.Kind] += w.Requests
	}
	for i := range workers {
		if t := total[workers[i].Kind]; t > 0 {
			workers[i].Share = round3(float64(workers[i].Requests) / float64(t))
		}
	}
	for _, k := range kinds {
		b := Balance{Kind: k, Workers: n[k], Requests: total[k], MinShare: 1}
		if b.Requests == 0 {
			b.MinShare = 0
			s.Balance = append(s.Balance, b)
			continue
		}
		for _, w := range workers {
			if w.Kind != k {
				continue
			}
			sh := float64(w.Requests) / float64(b.Requests)
			if sh > b.MaxShare {
				b.MaxShare, b.Busiest = sh, w.Name
			}
			b.MinShare = min(b.MinShare, sh)
		}
		mean := 1 / float64(b.Workers)
		b.Imbalance = round3(b.MaxShare / mean)
		b.Warn = b.Workers >= 2 && b.Requests >= MinBalanceRequests*b.Workers &&
			(b.MaxShare > ImbalanceWarn*mean || b.MinShare < IdleWarn*mean)
		b.MaxShare, b.MinShare = round3(b.MaxShare), round3(b.MinShare)
		s.Balance = append(s.Balance, b)
	}
	s.Warnings = Warnings(*s)
}

// Warnings are the loud messages of a run (also in summary.json warnings):
// failed requests with their reasons, imbalanced workers, a distorted wall
// clock, a partial run. Empty for a clean run.
func Warnings(s Summary) []string {
	w := []string{}
	if s.Error != "" {
		w = append(w, "the run failed: "+s.Error)
	}
	if s.Partial {
		w = append(w, fmt.Sprintf("partial run: stopped by %s with %d requests unfinished; the figures cover the requests that ended", s.StoppedBy, s.Requests.Unfinished))
	}
	if s.Requests.Failed > 0 {
		w = append(w, FailureMessage(s.Requests))
	}
	w = append(w, SLOWarnings(s.SLO)...)
	for _, b := range s.Balance {
		if b.Warn {
			w = append(w, fmt.Sprintf("imbalance: %s worker %s served %.1f%% of the %d %s requests (%.2f× an even share of %.1f%%; least busy %.1f%%)",
				b.Kind, b.Busiest, 100*b.MaxShare, b.Requests, b.Kind, b.Imbalance, 100/float64(b.Workers), 100*b.MinShare))
		}
	}
	if s.Clock.Fidelity == FidelityDistorted {
		w = append(w, WallWarning(s.Clock))
	}
	if s.Faults != nil && len(s.Faults.NotReached) > 0 {
		w = append(w, fmt.Sprintf("%d faults were scheduled after the run's end (first at %.3f s) and were not reached (summary.json faults.not_reached)",
			len(s.Faults.NotReached), s.Faults.NotReached[0].AtMS/1e3))
	}
	if o := s.Outputs; o.LinksDropped > 0 {
		w = append(w, fmt.Sprintf("links.csv holds the first %d NIC changes; %d later ones were dropped (outputs.links_rows_dropped)", o.LinksRows, o.LinksDropped))
	}
	for _, m := range s.Trace.Warnings {
		w = append(w, "trace: "+m)
	}
	return w
}

// FailureMessage says how many requests failed and why, most frequent
// reason first.
func FailureMessage(c Counts) string {
	type rc struct {
		r string
		n int
	}
	var rs []rc
	for r, n := range c.FailReasons {
		rs = append(rs, rc{r, n})
	}
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].n != rs[j].n {
			return rs[i].n > rs[j].n
		}
		return rs[i].r < rs[j].r
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d requests failed (%.1f%%):", c.Failed, c.Total, 100*c.FailedShare)
	for i, x := range rs {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s %d", x.r, x.n)
	}
	return b.String()
}

// MarkPartial records that the run was stopped before every request ended:
// stoppedBy says what stopped it (SIGINT, SIGTERM, wall-timeout, …) and
// unfinished are the requests still in the cluster.
func MarkPartial(s *Summary, stoppedBy string, unfinished int) {
	s.Partial, s.StoppedBy = true, stoppedBy
	s.Requests.Unfinished = unfinished
	s.Warnings = Warnings(*s)
}

// Version is pdemu's version from the build information: the module
// version, plus the VCS revision (and "+dirty") when the binary was built
// from a checkout; "(devel)" or "unknown" otherwise.
func Version() string {
	bi := buildinfo.Read()
	if !bi.OK {
		return "unknown"
	}
	v := bi.Version
	if bi.Revision != "" {
		v += " " + bi.Revision + bi.DirtyMark()
	}
	return v
}

// Digest is "sha256:" and the hex SHA-256 of b (the scenario digest of
// summary.json is Digest of the HCL bytes).
func Digest(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// DigestPath digests a trace: a file's bytes, or for a directory the
// sorted list of its regular files' relative paths and digests.
func DigestPath(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	hashFile := func(p string) ([]byte, error) {
		f, err := regular.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return nil, err
		}
		return h.Sum(nil), nil
	}
	if !st.IsDir() {
		b, err := hashFile(path)
		if err != nil {
			return "", err
		}
		return "sha256:" + hex.EncodeToString(b), nil
	}
	h := sha256.New()
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := hashFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(path, p)
		fmt.Fprintf(h, "%s  %x\n", filepath.ToSlash(rel), b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

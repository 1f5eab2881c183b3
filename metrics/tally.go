package metrics

import (
	"iter"
	"math"
	"sort"
	"time"

	"github.com/pdemu/pdemu/internal/idmap"
	"github.com/pdemu/pdemu/policy"
)

// Tally accumulates, one record at a time and in any order, what a run's
// summary.json, sessions.csv and router_windows.csv need from its records,
// so that a run streaming its records to disk need not keep them.
//
// Contract: for any records recs (none unfinished) added in any order,
// Summary equals Summarize(recs), Buckets SummarizeBuckets(recs),
// AttachWorkers AttachWorkers(…, recs), Recover Recover(…, recs) and the
// arrival windows what WriteRouterWindows counts (AddUnfinished adds an
// unfinished request to the windows only). It keeps a few numbers per
// request (the ten durations whose exact percentiles and sums the summary
// reports, as varints: some 30 to 45 bytes per completed request), counters
// per session, bucket, worker and emulated second with arrivals (sparse:
// bins), and for a run with faults the recovery slots still open
// (recovery.go): never a whole Record.
type Tally struct {
	total, completed, failed, aborted int
	failReasons                       map[string]int
	usedP                             int
	end                               time.Duration
	modes                             map[string]int
	prompt, gen                       int64

	// Per completed request, in the order added.
	ttft, e2e, tpot durs // tpot: only the defined ones (≥ 0)
	parts           partsList
	noParts         map[int]bool // completed requests (by index) without TTFT parts
	bucketOf        []uint16     // index into bucketNames; nil while every one is 0 (bucketIdxOf)

	bucketed    bool
	bucketNames []string
	bucketIdx   map[string]uint16
	buckets     []*bucketTally // by bucket index

	pCount, dCount map[string]int
	sessions       idmap.Dense[*SessionCount]

	windows Arrivals

	rec *recovery // nil: no faults (recovery.go)

	slo sloRows // one row per ended, not aborted request (slo.go, slorows.go)

	b *bounded // nil: exact (bounded.go)

	// scratch is the one slice the summary's exact quantiles decode a
	// list into, each in turn (scratchFor): a 1M-request run's Summary and
	// SLO then allocate one list's 8 MB instead of ten lists' 108 MB,
	// which, allocated at the end of the run on top of the run's live
	// heap, raised its peak RSS by some 85 MiB. SLO, which follows
	// Summary, drops it.
	scratch []time.Duration
}

// SessionCount is one session's share of the records (sessions.csv):
// its name, requests and those served Direct (completed).
type SessionCount struct {
	Name             string
	Requests, Direct int
	slo              int8 // bounded Tally: 0 no SLO row yet, 1 all met, 2 one missed
}

type bucketTally struct {
	n, completed, failed int
	failReasons          map[string]int
	match                int
	cached, prompt       int
}

// NewTally returns an empty tally that tracks the recovery (Recover) of
// faults at the times faultsAt (every fault the run may have: those it
// does not reach are simply not asked for).
func NewTally(faultsAt ...time.Duration) *Tally {
	return &Tally{failReasons: map[string]int{}, modes: map[string]int{}, noParts: map[int]bool{},
		bucketIdx: map[string]uint16{}, pCount: map[string]int{}, dCount: map[string]int{},
		rec: newRecovery(faultsAt), windows: Arrivals{}}
}

// TallyOf tallies recs (in-memory runs: the same computation as a
// streaming run's).
func TallyOf(recs []Record, faultsAt ...time.Duration) *Tally {
	t := NewTally(faultsAt...)
	for i := range recs {
		t.Add(&recs[i])
	}
	return t
}

// Add tallies an ended request's record (not an unfinished one).
func (t *Tally) Add(r *Record) {
	t.windows.add(r)
	if r.State == StateUnfinished {
		return
	}
	t.total++
	if r.P != "" {
		t.pCount[r.P]++
	}
	if r.D != "" {
		t.dCount[r.D]++
	}
	direct := !r.Failed && r.Mode == policy.ModeDirect.String()
	sc, _ := t.sessions.Get(r.SessionIdx)
	if sc == nil {
		sc = &SessionCount{Name: r.Session}
		t.sessions.Put(r.SessionIdx, sc)
	}
	sc.Requests++
	if direct {
		sc.Direct++
	}
	if r.Bucket != "" || r.BucketPolicy != "" {
		t.bucketed = true
	}
	bi, ok := t.bucketIdx[r.Bucket]
	if !ok {
		bi = uint16(len(t.bucketNames))
		t.bucketIdx[r.Bucket] = bi
		t.bucketNames = append(t.bucketNames, r.Bucket)
		t.buckets = append(t.buckets, &bucketTally{failReasons: map[string]int{}})
	}
	b := t.buckets[bi]
	b.n++
	if r.LengthBucketMatch {
		b.match++
	}
	b.cached += r.CachedTokens
	b.prompt += r.InputTokens
	if t.rec != nil {
		t.rec.add(recoverRow(r))
	}
	if r.State == StateAborted {
		// The client went away (serve): neither met nor missed the SLO.
		t.aborted++
		return
	}
	if t.b != nil {
		t.boundSLO(r, sc)
	}
	if t.b == nil || !t.b.sketched {
		t.slo.add(r.SessionIdx, r.Failed, r.TPOT >= 0, r.Arrival)
	}
	if r.Failed {
		t.failed++
		t.failReasons[r.Reason]++
		b.failed++
		b.failReasons[r.Reason]++
		return
	}
	t.completed++
	b.completed++
	t.modes[r.Mode]++
	if r.P != "" {
		t.usedP++
	}
	t.end = max(t.end, r.Arrival+r.E2E)
	t.prompt += int64(r.InputTokens)
	t.gen += int64(r.OutputTokens)
	if t.b != nil {
		t.boundCompleted(r, bi)
		if t.b.sketched {
			return
		}
	}
	i := t.ttft.len()
	t.ttft.add(r.TTFT)
	t.e2e.add(r.E2E)
	if bi != 0 && t.bucketOf == nil {
		t.bucketOf = make([]uint16, i, i+1) // the requests before: bucket 0
	}
	if t.bucketOf != nil {
		t.bucketOf = append(t.bucketOf, bi)
	}
	if r.TPOT >= 0 {
		t.tpot.add(r.TPOT)
	}
	if !r.HasParts {
		t.noParts[i] = true
	}
	p := &r.Parts
	t.parts.add(r.TTFT, &[7]time.Duration{p.Route, p.PQueue, p.Prefill, p.Transfer, p.KVWait, p.DPrefill, p.FirstToken})
}

// AddUnfinished counts an unfinished request in the arrival windows (the
// requests of router_windows.csv include them).
func (t *Tally) AddUnfinished(r *Record) { t.windows.add(r) }

// Arrivals returns the arrival windows counted so far (a copy).
func (t *Tally) Arrivals() *Arrivals { return t.windows.Clone() }

// Ended is the number of records tallied.
func (t *Tally) Ended() int { return t.total }

// counts returns the request totals (as Summarize counts them).
func counts(total, completed, failed, aborted int, reasons map[string]int) Counts {
	c := Counts{Total: total, Completed: completed, Failed: failed, Aborted: aborted, FailReasons: map[string]int{}}
	for r, n := range reasons {
		c.FailReasons[r] = n
	}
	if total > 0 {
		c.FailedShare = math.Round(float64(failed)/float64(total)*1e4) / 1e4
	}
	return c
}

// Summary is Summarize of the records tallied.
func (t *Tally) Summary() Summary {
	var s Summary
	s.Requests = counts(t.total, t.completed, t.failed, t.aborted, t.failReasons)
	// Each list is decoded into the one scratch slice (scratchFor) and
	// sorted in place there, in turn: one list's memory, allocated once.
	s.TTFT = quantilesInPlace(t.ttft.appendTo(t.scratchFor(t.ttft.len())))
	s.E2E = quantilesInPlace(t.e2e.appendTo(t.scratchFor(t.e2e.len())))
	s.Modes = map[string]int{}
	for _, md := range policy.AllModes {
		s.Modes[md.String()] = 0
	}
	for m, n := range t.modes {
		s.Modes[m] += n
	}
	if t.completed > 0 {
		s.PrefillShare = round3(float64(t.usedP) / float64(t.completed))
	}
	s.EmulatedSeconds = round3(t.end.Seconds())
	s.SchemaVersion = SchemaVersion
	s.Vars = map[string]string{}
	// explain
	parts := t.partTails()
	s.TTFTParts = PartsSummary{Route: parts[0], PQueue: parts[1], Prefill: parts[2],
		Transfer: parts[3], KVWait: parts[4], DPrefill: parts[5], FirstToken: parts[6]}
	s.TPOT = tailInPlace(t.tpot.appendTo(t.scratchFor(t.tpot.len())))
	if s.EmulatedSeconds > 0 {
		s.Throughput.PromptTokensPerS = round3(float64(t.prompt) / s.EmulatedSeconds)
		s.Throughput.GeneratedTokensPerS = round3(float64(t.gen) / s.EmulatedSeconds)
	}
	s.TTFTTail = t.tailParts(s.TTFT.P99)
	s.Warnings = Warnings(s)
	if t.Estimated() {
		t.boundSummary(&s)
	}
	return s
}

// partsOnePass bounds the completed requests whose seven TTFT parts
// partTails decodes in one pass, seven slices at once (56 bytes a request,
// 14 MB at the bound); beyond it, a pass per part keeps one slice at a
// time, so the 1M-request runs' peak memory does not grow. One pass
// instead of seven: 19.3M -> 6.6M instructions on the Mooncake 1P3D run
// (callgrind).
var partsOnePass = 1 << 18

// partTails is the Tail of each TTFT part over the completed requests that
// have parts.
func (t *Tally) partTails() (tails [7]Tail) {
	n := t.ttft.len() - len(t.noParts)
	if n > partsOnePass {
		for k := range tails {
			tails[k] = tailInPlace(t.partsWith(k))
		}
		return tails
	}
	all := make([]time.Duration, len(tails)*n)
	var cols [7][]time.Duration
	for k := range cols {
		cols[k] = all[k*n : k*n : (k+1)*n]
	}
	tt, pi := t.ttft.iter(), t.parts.iter()
	for i := range t.ttft.len() {
		p := pi.next(tt.next())
		if len(t.noParts) == 0 || !t.noParts[i] {
			for k := range cols {
				cols[k] = append(cols[k], p[k])
			}
		}
	}
	for k := range tails {
		tails[k] = tailInPlace(cols[k])
	}
	return tails
}

// partsWith returns part k of the completed requests that have parts, in
// the scratch slice (scratchFor).
func (t *Tally) partsWith(k int) []time.Duration {
	out := t.scratchFor(t.ttft.len() - len(t.noParts))
	tt, pi := t.ttft.iter(), t.parts.iter()
	for i := range t.ttft.len() {
		p := pi.next(tt.next())
		if len(t.noParts) == 0 || !t.noParts[i] {
			out = append(out, p[k])
		}
	}
	return out
}

// tailParts is tailParts of the completed requests (read in the order
// added, from the lists: no copy).
func (t *Tally) tailParts(p99 float64) TailParts {
	tp := TailParts{Threshold: p99, MeanMS: map[string]float64{}}
	sums := make([]time.Duration, len(TTFTPartNames))
	tt, pi := t.ttft.iter(), t.parts.iter()
	for i := range t.ttft.len() {
		d := tt.next()
		p := pi.next(d)
		if t.noParts[i] || ms(d) < p99 {
			continue
		}
		tp.Requests++
		for k := range sums {
			sums[k] += p[k]
		}
	}
	tp.setMeans(sums)
	return tp
}

// Buckets is SummarizeBuckets of the records tallied.
func (t *Tally) Buckets() []BucketSummary {
	if !t.bucketed {
		return nil
	}
	order := make([]int, len(t.bucketNames))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return t.bucketNames[order[i]] < t.bucketNames[order[j]] })
	ttft, e2e := t.ttft.slice(), t.e2e.slice()
	out := make([]BucketSummary, 0, len(order))
	for _, bi := range order {
		b := t.buckets[bi]
		var bt, be []time.Duration
		for i := range ttft {
			x := t.bucketIdxOf(i)
			if int(x) == bi {
				bt, be = append(bt, ttft[i]), append(be, e2e[i])
			}
		}
		s := BucketSummary{Bucket: t.bucketNames[bi], Requests: counts(b.n, b.completed, b.failed, b.n-b.completed-b.failed, b.failReasons),
			TTFT: QuantilesMS(bt), E2E: QuantilesMS(be)}
		if t.Estimated() {
			t.boundBucket(bi, &s)
		}
		s.LengthBucketMatch = round3(float64(b.match) / float64(b.n))
		if b.prompt > 0 {
			s.CachedTokenShare = round3(float64(b.cached) / float64(b.prompt))
		}
		out = append(out, s)
	}
	return out
}

// scratchFor returns the Tally's scratch slice emptied, with room for n
// values: the caller's previous use of it is over. Its allocation is
// sized for the largest list any caller asks for (every completed and
// every ended request), so a Summary and the SLO after it allocate it
// once; SLO drops it (a server's Tally does not keep it between
// summaries).
func (t *Tally) scratchFor(n int) []time.Duration {
	if cap(t.scratch) < n {
		t.scratch = make([]time.Duration, 0, max(n, t.ttft.len(), t.slo.len()))
	}
	return t.scratch[:0]
}

// bucketIdxOf is the bucket index of the i-th completed request.
func (t *Tally) bucketIdxOf(i int) uint16 {
	if t.bucketOf == nil {
		return 0
	}
	return t.bucketOf[i]
}

// AttachWorkers is AttachWorkers with the records tallied.
func (t *Tally) AttachWorkers(s *Summary, workers []WorkerSummary) {
	attachWorkers(s, workers, t.pCount, t.dCount)
}

// Sessions yields each session's index and counts, by ascending index.
func (t *Tally) Sessions() iter.Seq2[int32, *SessionCount] { return t.sessions.All() }

// NumSessions is the number of sessions Sessions yields.
func (t *Tally) NumSessions() int { return t.sessions.Len() }

// Recover is Recover with the records tallied: each fault's time must
// have been given to NewTally.
func (t *Tally) Recover(faults []FaultRecord) { t.rec.fill(faults) }

// Watermark tells the tally that every request that arrived before w has
// been added: the recovery windows before it are judged and dropped.
func (t *Tally) Watermark(w time.Duration) {
	if t.rec != nil {
		t.rec.watermark(w)
	}
}

// TracksFaults reports whether the tally tracks recoveries (it was given
// fault times): only then does it read Watermark.
func (t *Tally) TracksFaults() bool { return t.rec != nil }

// Arrivals counts requests per emulated second of arrival for
// router_windows.csv: the requests that arrived (unfinished ones
// included) and those served Direct (completed). Windows of any whole
// number of seconds are sums of its seconds.
type Arrivals struct {
	bins bins[arrivalBin] // sparse: memory by distinct seconds, not span
}

type arrivalBin struct{ req, direct int32 }

// NewArrivals returns empty counts.
func NewArrivals() *Arrivals { return &Arrivals{} }

func (a *Arrivals) add(r *Record) {
	b := a.bins.at(int64(max(r.Arrival, 0) / time.Second))
	b.req++
	if !r.Failed && r.State != StateUnfinished && r.Mode == policy.ModeDirect.String() {
		b.direct++
	}
}

// Bound bounds the counts' memory (a server's): past maxChunks chunks of
// seconds, a bin counts twice as many seconds (Resolution).
func (a *Arrivals) Bound(maxChunks int) {
	a.bins.bound(maxChunks, func(dst, src *arrivalBin) { dst.req += src.req; dst.direct += src.direct })
}

// Resolution is how many seconds a bin counts (1 s unless bounded).
func (a *Arrivals) Resolution() time.Duration {
	if a == nil {
		return time.Second
	}
	return time.Duration(a.bins.resolution()) * time.Second
}

// Add counts r (of any state).
func (a *Arrivals) Add(r *Record) { a.add(r) }

// Clone returns a copy of a.
func (a *Arrivals) Clone() *Arrivals { return &Arrivals{bins: a.bins.clone()} }

// ArrivalsOf counts recs.
func ArrivalsOf(recs []Record) *Arrivals {
	a := NewArrivals()
	for i := range recs {
		a.add(&recs[i])
	}
	return a
}

package metrics

import (
	"fmt"
	"math"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"
)

// Bounded summaries (pdemu serve: a server that runs for ever).
//
// A Tally made bounded (Bound) keeps the exact computation while at most
// BoundExact requests completed, so a short served run's summary is the
// exact one; past that it drops its per-request samples and answers from
// what it kept in parallel since the first request:
//
//   - quantiles (p50 … p999) of TTFT, E2E, TPOT, the TTFT parts and the
//     per-bucket TTFT/E2E from DDSketches (github.com/DataDog/sketches-go)
//     of relative accuracy SketchAccuracy: each reported quantile is
//     within ±1 % of the value of a rank within the requested quantile's
//     rank; means and maxima stay exact;
//   - ttft_tail from the per-sketch-bin sums of the TTFT parts: the
//     requests of every bin at or above the p99's bin (±1 % around the
//     threshold);
//   - the SLO counts exactly (the thresholds are given to Bound); the
//     first/last-quarter TTFT means over whole emulated minutes of
//     arrival (the quarter boundaries rounded to the minute);
//   - sessions: at most the sessions the tally was not told to Forget
//     (the router forgets idle sessions; their requests stay in every
//     total, their sessions.csv rows are not written, and
//     router.sessions_forgotten counts them).
//
// Summary.Estimates says which of the two the summary is.

// BoundExact is how many completed requests a bounded Tally keeps exact
// samples of before it answers from its sketches.
const BoundExact = 10000

// SketchAccuracy is the relative accuracy of a bounded Tally's sketches.
const SketchAccuracy = 0.01

// Estimates is summary.json's estimates: present only when the summary's
// quantiles are estimates (a bounded Tally past BoundExact requests).
type Estimates struct {
	Method           string  `json:"method"`
	RelativeAccuracy float64 `json:"relative_accuracy"`
	ExactUpTo        int     `json:"exact_up_to"`
	Note             string  `json:"note"`
}

// sketch is a bounded distribution of durations: DDSketch quantiles (in
// ms), exact count, sum and max.
type sketch struct {
	sk  *ddsketch.DDSketch
	n   int
	sum float64 // ns
	max time.Duration
}

var sketchMapping = func() mapping.IndexMapping {
	m, err := mapping.NewLogarithmicMapping(SketchAccuracy)
	if err != nil {
		panic(err) // a constant accuracy in (0, 1): cannot fail
	}
	return m
}()

func newSketch() *sketch {
	return &sketch{sk: ddsketch.NewDDSketchFromStoreProvider(sketchMapping, store.BufferedPaginatedStoreConstructor)}
}

func (s *sketch) add(d time.Duration) {
	_ = s.sk.Add(math.Max(ms64(d), 0)) // never negative, never NaN: no error
	if s.n == 0 || d > s.max {
		s.max = d
	}
	s.n++
	s.sum += float64(d)
}

func ms64(d time.Duration) float64 { return float64(d) / 1e6 }

func (s *sketch) q(p float64) float64 {
	v, err := s.sk.GetValueAtQuantile(p)
	if err != nil {
		return 0
	}
	return round3(math.Min(v, ms(s.max)))
}

func (s *sketch) quantiles() Quantiles {
	if s.n == 0 {
		return Quantiles{}
	}
	return Quantiles{P50: s.q(0.50), P90: s.q(0.90), P99: s.q(0.99), Mean: round3(s.sum / float64(s.n) / 1e6), Max: ms(s.max)}
}

func (s *sketch) tail() Tail {
	if s.n == 0 {
		return Tail{}
	}
	return Tail{P50: s.q(0.50), P90: s.q(0.90), P95: s.q(0.95), P99: s.q(0.99), P999: s.q(0.999),
		Mean: round3(s.sum / float64(s.n) / 1e6), Max: ms(s.max)}
}

// bounded is what a bounded Tally keeps besides its counters.
type bounded struct {
	slo             SLO
	sketched        bool // the exact samples were dropped
	ttft, e2e, tpot *sketch
	parts           [7]*sketch
	tailBins        map[int]*[8]float64 // TTFT sketch bin → sums of the 7 parts (ns), count
	bucketTTFT      map[uint16]*sketch
	bucketE2E       map[uint16]*sketch
	sloN, sloMet    int
	missed          map[string]int
	minutes         bins[minuteBin] // by emulated minute of arrival
	forgot          forgotten
}

type minuteBin struct {
	ended, completed int32
	ttft             int64 // ns, completed requests
}

// forgotten sums the sessions a Tally forgot.
type forgotten struct {
	sessions, sloSessions, sloMet int
}

// Bound makes t bounded (see above), with slo the run's SLO (as its
// summary's SLO will be asked for). Call it before the first Add.
func (t *Tally) Bound(slo SLO) {
	b := &bounded{slo: slo, ttft: newSketch(), e2e: newSketch(), tpot: newSketch(), tailBins: map[int]*[8]float64{},
		bucketTTFT: map[uint16]*sketch{}, bucketE2E: map[uint16]*sketch{},
		missed: map[string]int{"failed": 0, "ttft": 0, "tpot": 0, "e2e": 0}}
	for k := range b.parts {
		b.parts[k] = newSketch()
	}
	b.minutes.bound(BoundChunks, func(dst, src *minuteBin) {
		dst.ended += src.ended
		dst.completed += src.completed
		dst.ttft += src.ttft
	})
	t.windows.Bound(BoundChunks)
	t.b = b
}

// BoundChunks bounds the per-second counts of a bounded Tally (the
// arrival windows of router_windows.csv, the SLO's minutes): 256 chunks of
// 64 bins; past them a bin counts twice as many seconds, and
// router_windows.csv's window is widened to a multiple of it.
const BoundChunks = 256

// Estimated reports whether the summary's quantiles are estimates.
func (t *Tally) Estimated() bool { return t.b != nil && t.b.sketched }

// boundSLO counts an ended (not aborted) request r of session sc for the SLO.
func (t *Tally) boundSLO(r *Record, sc *SessionCount) {
	b := t.b
	b.sloN++
	met := true
	miss := func(k string) { b.missed[k]++; met = false }
	if r.Failed {
		miss("failed")
	} else {
		if b.slo.TTFT > 0 && r.TTFT > b.slo.TTFT {
			miss("ttft")
		}
		if b.slo.TPOT > 0 && r.TPOT > b.slo.TPOT {
			miss("tpot")
		}
		if b.slo.E2E > 0 && r.E2E > b.slo.E2E {
			miss("e2e")
		}
	}
	if met {
		b.sloMet++
		if sc.slo == 0 {
			sc.slo = 1
		}
	} else {
		sc.slo = 2
	}
	m := b.minutes.at(int64(max(r.Arrival, 0) / time.Minute))
	m.ended++
	if !r.Failed {
		m.completed++
		m.ttft += int64(r.TTFT)
	}
}

// boundCompleted adds a completed request (bucket bi) to the sketches,
// and drops the exact samples once past BoundExact.
func (t *Tally) boundCompleted(r *Record, bi uint16) {
	b := t.b
	b.ttft.add(r.TTFT)
	b.e2e.add(r.E2E)
	if r.TPOT >= 0 {
		b.tpot.add(r.TPOT)
	}
	if t.bucketed {
		for _, m := range []map[uint16]*sketch{b.bucketTTFT, b.bucketE2E} {
			if m[bi] == nil {
				m[bi] = newSketch()
			}
		}
		b.bucketTTFT[bi].add(r.TTFT)
		b.bucketE2E[bi].add(r.E2E)
	}
	if r.HasParts {
		p := &r.Parts
		i := sketchMapping.Index(math.Max(ms64(r.TTFT), sketchMapping.MinIndexableValue()))
		sums := b.tailBins[i]
		if sums == nil {
			sums = new([8]float64)
			b.tailBins[i] = sums
		}
		for k, d := range [7]time.Duration{p.Route, p.PQueue, p.Prefill, p.Transfer, p.KVWait, p.DPrefill, p.FirstToken} {
			b.parts[k].add(d)
			sums[k] += float64(d)
		}
		sums[7]++
	}
	if !b.sketched && t.completed > BoundExact {
		b.sketched = true
		t.ttft, t.e2e, t.tpot, t.parts = durs{}, durs{}, durs{}, partsList{}
		t.noParts, t.bucketOf, t.slo = map[int]bool{}, nil, sloRows{}
	}
}

// boundSummary overwrites the distribution fields of s with the sketches'.
func (t *Tally) boundSummary(s *Summary) {
	b := t.b
	s.TTFT, s.E2E, s.TPOT = b.ttft.quantiles(), b.e2e.quantiles(), b.tpot.tail()
	s.TTFTParts = PartsSummary{Route: b.parts[0].tail(), PQueue: b.parts[1].tail(), Prefill: b.parts[2].tail(),
		Transfer: b.parts[3].tail(), KVWait: b.parts[4].tail(), DPrefill: b.parts[5].tail(), FirstToken: b.parts[6].tail()}
	// The tail: every sketch bin at or above the p99's.
	tp := TailParts{Threshold: s.TTFT.P99, MeanMS: map[string]float64{}}
	from := sketchMapping.Index(math.Max(s.TTFT.P99, sketchMapping.MinIndexableValue()))
	var sums [8]float64
	for i, v := range b.tailBins {
		if i >= from {
			for k := range sums {
				sums[k] += v[k]
			}
		}
	}
	tp.Requests = int(sums[7])
	best := -1.0
	for k, n := range TTFTPartNames {
		m := 0.0
		if tp.Requests > 0 {
			m = round3(sums[k] / sums[7] / 1e6)
		}
		tp.MeanMS[n] = m
		if tp.Requests > 0 && m > best {
			best, tp.Dominant = m, n
		}
	}
	s.TTFTTail = tp
	s.Estimates = &Estimates{Method: "ddsketch", RelativeAccuracy: SketchAccuracy, ExactUpTo: BoundExact,
		Note: fmt.Sprintf("past %d completed requests the quantiles (ttft_ms, e2e_ms, tpot_ms, ttft_parts_ms, per_bucket) are DDSketch estimates within %g%% relative error; means and maxima are exact; ttft_tail counts the sketch bins at or above p99's; slo quarters are whole emulated minutes of arrival",
			BoundExact, 100*SketchAccuracy)}
	s.Warnings = Warnings(*s)
}

// boundBucket fills a bucket's quantiles from its sketches.
func (t *Tally) boundBucket(bi int, s *BucketSummary) {
	if q := t.b.bucketTTFT[uint16(bi)]; q != nil {
		s.TTFT = q.quantiles()
	}
	if q := t.b.bucketE2E[uint16(bi)]; q != nil {
		s.E2E = q.quantiles()
	}
}

// boundSLOSummary is SLO from the bounded counters.
func (t *Tally) boundSLOSummary(slo SLO, s Summary) *SLOSummary {
	b := t.b
	out := &SLOSummary{TTFTMs: ms(slo.TTFT), TPOTMs: ms(slo.TPOT), E2EMs: ms(slo.E2E), Target: slo.Attainment, Missed: map[string]int{}}
	for k, v := range b.missed {
		out.Missed[k] = v
	}
	out.Met = b.sloMet
	n := b.sloN
	if n > 0 {
		out.Attainment = round4(float64(out.Met) / float64(n))
	}
	out.OK = n > 0 && float64(out.Met) >= slo.Attainment*float64(n)
	if s.EmulatedSeconds > 0 {
		out.GoodputRPS = round4(float64(out.Met) / s.EmulatedSeconds)
	}
	out.Sessions, out.SessionsMet = b.forgot.sloSessions, b.forgot.sloMet
	for _, sc := range t.sessions.All() {
		if sc.slo != 0 {
			out.Sessions++
			if sc.slo == 1 {
				out.SessionsMet++
			}
		}
	}
	if out.Sessions > 0 {
		out.SessionAttainment = round4(float64(out.SessionsMet) / float64(out.Sessions))
	}
	out.FirstQuarterTTFTMs, out.LastQuarterTTFTMs = b.quarters()
	out.overload(s)
	return out
}

// quarters is quarterTTFT over whole minutes: the first minutes of
// arrival holding a quarter of the ended requests, and the last ones.
func (b *bounded) quarters() (first, last float64) {
	var mins []minuteBin
	total := 0
	b.minutes.each(func(_ int64, v *minuteBin) {
		if v.ended > 0 {
			mins = append(mins, *v)
			total += int(v.ended)
		}
	})
	q := total / 4
	if q == 0 {
		return 0, 0
	}
	mean := func(ms []minuteBin) float64 {
		var n, sum int64
		k := 0
		for _, m := range ms {
			n += int64(m.completed)
			sum += m.ttft
			k += int(m.ended)
			if k >= q {
				break
			}
		}
		if n == 0 {
			return 0
		}
		return round3(float64(sum) / float64(n) / 1e6)
	}
	rev := make([]minuteBin, len(mins))
	for i, m := range mins {
		rev[len(mins)-1-i] = m
	}
	return mean(mins), mean(rev)
}

// Forget drops session s's counts (the router forgot the session): its
// requests stay in every total; it no longer has a sessions.csv row and
// counts in Forgotten. Only a bounded Tally forgets.
func (t *Tally) Forget(s int32) {
	if t.b == nil {
		return
	}
	sc, _ := t.sessions.Get(s)
	if sc == nil {
		return
	}
	t.sessions.Delete(s)
	t.b.forgot.sessions++
	if sc.slo != 0 {
		t.b.forgot.sloSessions++
		if sc.slo == 1 {
			t.b.forgot.sloMet++
		}
	}
}

// Forgotten is how many sessions the Tally forgot.
func (t *Tally) Forgotten() int {
	if t.b == nil {
		return 0
	}
	return t.b.forgot.sessions
}

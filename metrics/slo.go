package metrics

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// SLO is a service-level objective (topology.SLO): a request meets it
// when it completed with TTFT, TPOT and E2E each at most its threshold
// (0 = not checked); the run meets it when at least Attainment of its
// requests do.
type SLO struct {
	TTFT, TPOT, E2E time.Duration
	Attainment      float64
}

// Overload thresholds of the verdict (docs/MODEL.md, "SLOs and goodput").
const (
	// OverloadTTFTFactor: p99 TTFT above this many times the SLO's TTFT
	// is far beyond it.
	OverloadTTFTFactor = 10
	// OverloadGrowth: requests arriving in the last quarter of the run
	// waiting (mean TTFT) this many times longer than those of the first
	// quarter, and beyond the SLO, mean queues that grow without bound.
	OverloadGrowth = 4
)

// SLOSummary is summary.json's slo: the objective, how many requests and
// sessions met it, goodput, and the overload verdict.
type SLOSummary struct {
	TTFTMs float64 `json:"ttft_ms"` // thresholds; 0 = not checked
	TPOTMs float64 `json:"tpot_ms"`
	E2EMs  float64 `json:"e2e_ms"`
	Target float64 `json:"target"` // the attainment the SLO asks for
	// Met requests completed within every threshold; Attainment is
	// Met / requests; OK is Attainment >= Target.
	Met        int     `json:"met"`
	Attainment float64 `json:"attainment"`
	OK         bool    `json:"ok"`
	// Missed counts why requests missed it (one request may count under
	// several): failed, ttft, tpot, e2e.
	Missed map[string]int `json:"missed"`
	// GoodputRPS is Met per emulated second.
	GoodputRPS float64 `json:"goodput_rps"`
	// Sessions met: every request of the session met the SLO.
	Sessions          int     `json:"sessions"`
	SessionsMet       int     `json:"sessions_met"`
	SessionAttainment float64 `json:"session_attainment"`
	// TTFT growth over the run: mean TTFT (ms) of the completed requests
	// arriving in the first and the last quarter of the arrivals.
	FirstQuarterTTFTMs float64 `json:"first_quarter_ttft_ms"`
	LastQuarterTTFTMs  float64 `json:"last_quarter_ttft_ms"`
	// Overloaded: p99 TTFT is more than OverloadTTFTFactor × the SLO's
	// TTFT, or TTFT grows over the run (OverloadGrowth); Verdict says
	// which, with where the tail's time went ("" when not overloaded).
	Overloaded bool   `json:"overloaded"`
	Verdict    string `json:"verdict"`
}

// sloRow is what the SLO needs of one ended request.
type sloRow struct {
	sess                     int32
	failed                   bool
	arrival, ttft, tpot, e2e time.Duration
}

// SLO computes the SLO figures of the requests tallied, with s the
// run's summary (emulated seconds, TTFT p99 and its tail's parts).
func (t *Tally) SLO(slo SLO, s Summary) *SLOSummary {
	defer func() { t.scratch = nil }() // Summary's and quarterTTFT's (scratchFor)
	if t.Estimated() {
		return t.boundSLOSummary(slo, s)
	}
	out, bad := newSLOSummary(slo), &sessVerdicts{}
	t.slo.each(&t.ttft, &t.e2e, &t.tpot, func(r sloRow) { out.score(slo, r, bad) })
	out.finish(slo, s, t.slo.len(), bad)
	out.FirstQuarterTTFTMs, out.LastQuarterTTFTMs = t.quarterTTFT()
	out.overload(s)
	return out
}

// newSLOSummary is an SLOSummary of slo with nothing counted yet.
func newSLOSummary(slo SLO) *SLOSummary {
	return &SLOSummary{TTFTMs: ms(slo.TTFT), TPOTMs: ms(slo.TPOT), E2EMs: ms(slo.E2E), Target: slo.Attainment,
		Missed: map[string]int{"failed": 0, "ttft": 0, "tpot": 0, "e2e": 0}}
}

// score counts one ended request against slo: Met or the reasons it
// missed it (Missed), and in bad whether its session has a request that
// missed it (a session's first request adds it as met).
func (out *SLOSummary) score(slo SLO, r sloRow, bad *sessVerdicts) {
	met := true
	miss := func(k string) { out.Missed[k]++; met = false }
	if r.failed {
		miss("failed")
	} else {
		if slo.TTFT > 0 && r.ttft > slo.TTFT {
			miss("ttft")
		}
		if slo.TPOT > 0 && r.tpot > slo.TPOT {
			miss("tpot")
		}
		if slo.E2E > 0 && r.e2e > slo.E2E {
			miss("e2e")
		}
	}
	if met {
		out.Met++
	}
	bad.add(r.sess, met)
}

// sessVerdicts is score's verdict per session: seen, and whether one of
// its requests missed the SLO. Session indices are dense from 0
// (workload.Request), so they index a slice, which a map keyed by index
// cost ~2 % of a Mooncake run in map growth; an index outside the slice's
// reach (none a loader makes) goes to the map instead.
type sessVerdicts struct {
	dense []uint8 // by session index: 0 unseen, sessMet, sessMissed
	other map[int32]bool
	n     int // sessions seen
	met   int // of which none missed
}

const (
	sessMet    = 1
	sessMissed = 2
	// denseSessions bounds the slice (bytes); a larger index is kept in
	// the map.
	denseSessions = 1 << 22
)

// add counts a request of session s that met the SLO or not.
func (v *sessVerdicts) add(s int32, met bool) {
	if s < 0 || s >= denseSessions {
		if v.other == nil {
			v.other = map[int32]bool{}
		}
		missed, seen := v.other[s]
		v.other[s] = missed || !met
		v.count(seen, missed, met)
		return
	}
	if need := int(s) + 1; need > len(v.dense) {
		// Never shrunk: what lies past len is still zero.
		v.dense = slices.Grow(v.dense, need-len(v.dense))[:need]
	}
	st := v.dense[s]
	v.count(st != 0, st == sessMissed, met)
	if st != sessMissed {
		v.dense[s] = sessMet
		if !met {
			v.dense[s] = sessMissed
		}
	}
}

// count updates n and met for a session's request: seen before, and
// whether it had missed; met is this request's verdict.
func (v *sessVerdicts) count(seen, missed, met bool) {
	switch {
	case !seen:
		v.n++
		if met {
			v.met++
		}
	case !missed && !met:
		v.met-- // its first miss
	}
}

// finish sets what follows from Met over the n requests scored and from
// bad (score's sessions): attainment, OK, goodput over s's emulated
// seconds, and the sessions met.
func (out *SLOSummary) finish(slo SLO, s Summary, n int, bad *sessVerdicts) {
	if n > 0 {
		out.Attainment = round4(float64(out.Met) / float64(n))
	}
	out.OK = n > 0 && float64(out.Met) >= slo.Attainment*float64(n)
	if s.EmulatedSeconds > 0 {
		out.GoodputRPS = round4(float64(out.Met) / s.EmulatedSeconds)
	}
	out.Sessions, out.SessionsMet = bad.n, bad.met
	if out.Sessions > 0 {
		out.SessionAttainment = round4(float64(out.SessionsMet) / float64(out.Sessions))
	}
}

// quarterTTFT is the mean TTFT (ms) of the completed requests among the
// first and the last quarter of the ended requests by arrival (ties in
// the order tallied, as a stable sort orders them). Only the arrivals are
// sorted: the quarters' bounds are the q-th and the (n-q+1)-th arrival,
// and a pass in tallied order takes the rows at or inside them, with as
// many of each bound's ties as the stable order puts inside.
func (t *Tally) quarterTTFT() (first, last float64) {
	n := t.slo.len()
	q := n / 4
	if q == 0 {
		return 0, 0
	}
	arr := t.scratchFor(n)
	t.slo.each(&t.ttft, &t.e2e, &t.tpot, func(r sloRow) { arr = append(arr, r.arrival) })
	sortDurations(arr)
	a1, a2 := arr[q-1], arr[n-q]
	lt1 := sort.Search(n, func(i int) bool { return arr[i] >= a1 })    // rows before a1
	gt2 := n - sort.Search(n, func(i int) bool { return arr[i] > a2 }) // rows after a2
	eq2 := n - gt2 - sort.Search(n, func(i int) bool { return arr[i] >= a2 })
	arr = nil
	take1, skip2 := q-lt1, eq2-(q-gt2) // a1's first ties in; a2's first ties out
	var sum1, sum2 time.Duration
	var k1, k2 int
	t.slo.each(&t.ttft, &t.e2e, &t.tpot, func(r sloRow) {
		in1 := r.arrival < a1
		if r.arrival == a1 && take1 > 0 {
			in1 = true
			take1--
		}
		in2 := r.arrival > a2
		if r.arrival == a2 {
			if skip2 > 0 {
				skip2--
			} else {
				in2 = true
			}
		}
		if r.failed {
			return
		}
		if in1 {
			sum1 += r.ttft
			k1++
		}
		if in2 {
			sum2 += r.ttft
			k2++
		}
	})
	mean := func(sum time.Duration, k int) float64 {
		if k == 0 {
			return 0
		}
		return round3(ms(sum) / float64(k))
	}
	return mean(sum1, k1), mean(sum2, k2)
}

// overload sets the verdict.
func (o *SLOSummary) overload(s Summary) {
	var why []string
	if o.TTFTMs > 0 && s.TTFT.P99 > OverloadTTFTFactor*o.TTFTMs {
		why = append(why, fmt.Sprintf("p99 TTFT %.1f s is %.0f× the SLO's %.1f s", s.TTFT.P99/1000, s.TTFT.P99/o.TTFTMs, o.TTFTMs/1000))
	}
	if o.FirstQuarterTTFTMs > 0 && o.LastQuarterTTFTMs > OverloadGrowth*o.FirstQuarterTTFTMs && (o.TTFTMs == 0 || o.LastQuarterTTFTMs > o.TTFTMs) {
		why = append(why, fmt.Sprintf("queues grow over the run: requests arriving in its last quarter waited %.1f s for their first token on average, %.0f× the %.1f s of the first quarter",
			o.LastQuarterTTFTMs/1000, o.LastQuarterTTFTMs/o.FirstQuarterTTFTMs, o.FirstQuarterTTFTMs/1000))
	}
	if len(why) == 0 {
		return
	}
	o.Overloaded = true
	v := "overloaded: " + why[0]
	for _, w := range why[1:] {
		v += "; " + w
	}
	if tail := s.TTFTTail; tail.Dominant != "" {
		total := 0.0
		for _, x := range tail.MeanMS {
			total += x
		}
		v += fmt.Sprintf("; the %d slowest requests (TTFT >= %.1f s) spent %.1f of their %.1f s in %s", tail.Requests, tail.Threshold/1000,
			tail.MeanMS[tail.Dominant]/1000, total/1000, tail.Dominant)
	}
	o.Verdict = v
}

// SLOWarnings are the SLO lines of Warnings: a missed SLO and the
// overload verdict.
func SLOWarnings(o *SLOSummary) []string {
	if o == nil {
		return nil
	}
	var w []string
	if !o.OK && o.Sessions > 0 {
		w = append(w, fmt.Sprintf("SLO missed: %.1f%% of requests met it (%s), target %.0f%%; missed for ttft %d, tpot %d, e2e %d, failed %d",
			100*o.Attainment, o.Thresholds(), 100*o.Target, o.Missed["ttft"], o.Missed["tpot"], o.Missed["e2e"], o.Missed["failed"]))
	}
	if o.Overloaded {
		w = append(w, o.Verdict)
	}
	return w
}

// Thresholds lists the SLO's thresholds ("ttft <= 10s, tpot <= 100ms").
func (o *SLOSummary) Thresholds() string {
	s := ""
	for _, x := range []struct {
		k  string
		ms float64
	}{{"ttft", o.TTFTMs}, {"tpot", o.TPOTMs}, {"e2e", o.E2EMs}} {
		if x.ms == 0 {
			continue
		}
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s <= %s", x.k, time.Duration(x.ms*float64(time.Millisecond)))
	}
	if s == "" {
		return "no threshold: completed"
	}
	return s
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

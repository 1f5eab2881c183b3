package experiment

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/transfer"
)

// Window is the default length of the time windows of the router
// counters (runDef.window overrides it).
const Window = 30 * time.Minute

// windowStats are the router counters of one time window (by arrival).
type windowStats struct {
	Requests, Direct, Fallbacks, Rejections, Migrations int
}

// runStats are the figures the report needs from one run.
type runStats struct {
	sum RunSummary
	// medianUncached: median prompt tokens computed per request.
	medianUncached float64
	// Reseeds: measured TTFT (s) and the unqueued service components the
	// cost models give for their tokens and bytes (s).
	reseedTTFT, reseedPrefill, reseedXfer []float64
	reseedTokens                          []float64
	// reseedStale: tokens a reseed re-prefilled beyond its own append
	// (context the backup lacked); reseedLarge: reseeds whose append
	// exceeds τ_append (the session left its worker for that append).
	reseedStale []float64
	reseedLarge int
	windows     []windowStats
	// syncTokens: KV tokens a D→P sync moves (Direct append + output);
	// pCacheMax: the prefill worker's peak prefix-cache occupancy.
	syncTokens int64
	pCacheMax  int
	// busiest: the largest share of requests one decode/fused worker served.
	busiest float64
	// attr are the breakdowns of attribution.go.
	attr attrStats
}

func computeStats(spec *topology.Spec, res *actors.Result, window time.Duration, appends map[int64]int) runStats {
	s := res.Summary
	var st runStats
	st.sum = RunSummary{
		Name: spec.Name, Scenario: spec.Source, Seed: spec.Workload.Seed,
		Requests: s.Requests.Total, Failed: s.Requests.Failed, PShare: s.PrefillShare,
		TTFTp50: s.TTFT.P50, TTFTp90: s.TTFT.P90, TTFTp99: s.TTFT.P99, TTFTMean: s.TTFT.Mean, E2Ep50: s.E2E.P50,
		Emulated: res.End.Seconds(),
	}
	if s.Requests.Total > 0 {
		st.sum.DirectShare = float64(s.Modes["Direct"]) / float64(s.Requests.Total)
	}
	if r := s.Router; r != nil {
		st.sum.Migrations, st.sum.Fallbacks, st.sum.Rejections = r.Migrations, r.Fallbacks, r.Rejections
	}

	// Cost models for the reseed decomposition.
	var pre func(newT, cached int) time.Duration
	nics := map[string]transfer.Config{}
	if len(spec.Prefill) > 0 {
		if perf, err := actors.PerfFor(spec.Prefill[0]); err == nil {
			pre = perf.PrefillTime
		}
		if cfgs, err := actors.NICConfigs(spec); err == nil {
			byName := map[string]transfer.Config{}
			for _, c := range cfgs {
				byName[c.Name] = c
			}
			for _, l := range spec.Links {
				nics[l.From+"/"+l.To] = byName[l.From+"/"+l.Device]
			}
		}
	}

	for _, se := range res.Series {
		if se.Kind == "prefill" {
			st.pCacheMax = max(st.pCacheMax, se.Max())
		}
	}
	perD := map[string]int{}
	for _, r := range res.Records {
		perD[r.D]++
	}
	for _, n := range perD {
		st.busiest = max(st.busiest, float64(n)/float64(max(1, len(res.Records))))
	}
	uncached := make([]float64, 0, len(res.Records))
	last := map[string]string{}
	for _, r := range res.Records {
		st.sum.Prefilled += int64(r.AppendTokens)
		st.sum.Decoded += int64(r.OutputTokens)
		uncached = append(uncached, float64(r.AppendTokens))
		w := int(r.Arrival / window)
		for len(st.windows) <= w {
			st.windows = append(st.windows, windowStats{})
		}
		ws := &st.windows[w]
		ws.Requests++
		switch r.Mode {
		case "Direct":
			ws.Direct++
			if !r.Failed { // (a session's last turn is not synced: an upper bound)
				st.syncTokens += int64(r.AppendTokens + r.OutputTokens)
			}
		case "Fallback":
			ws.Fallbacks++
		}
		if !r.Failed && r.Reason != "" {
			ws.Rejections += len(strings.Split(r.Reason, ";"))
		}
		if !r.Failed && r.Mode != "Fallback" && r.D != "" {
			if prev, ok := last[r.Session]; ok && prev != r.D {
				ws.Migrations++
			}
			last[r.Session] = r.D
		}
		if r.Mode == "Reseed" && !r.Failed && pre != nil {
			st.reseedTTFT = append(st.reseedTTFT, r.TTFT.Seconds())
			st.reseedPrefill = append(st.reseedPrefill, pre(r.AppendTokens, r.CachedTokens).Seconds())
			st.reseedTokens = append(st.reseedTokens, float64(r.AppendTokens))
			if a, ok := appends[r.ID]; ok {
				st.reseedStale = append(st.reseedStale, float64(max(0, r.AppendTokens-a)))
				if a > spec.Router.TauAppend {
					st.reseedLarge++
				}
			}
			if c, ok := nics[r.P+"/"+r.D]; ok && c.Validate() == nil {
				st.reseedXfer = append(st.reseedXfer, transfer.Estimate(c, r.TransferBytes).Seconds())
			}
		}
	}
	st.medianUncached = quantile(uncached, 0.5)
	st.attr = computeAttr(res.Records, res.Evictions, s.TTFT.P99)
	return st
}

// quantile is the q-quantile of xs (nearest rank; NaN when empty). xs is
// sorted in place.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sort.Float64s(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func minMax(xs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// percentile is the nearest-rank percentile of sorted vs.
func percentile(vs []float64, q float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(vs)))) - 1
	return vs[min(max(k, 0), len(vs)-1)]
}

// ttftPartsFigures draws, for the runs whose per_request.csv has the TTFT
// part columns, a stacked bar of each part's p50 and one of its p99.
func ttftPartsFigures(runs []*Run) ([]*Figure, error) {
	return ttftPartsFiguresOf(runs, "", "")
}

// partsSpread is the ratio of the largest to the smallest stacked total
// above which the TTFT-parts bars are drawn as shares of each run's
// total (with the total in its label): on one linear millisecond axis the
// short runs' bars would be invisible.
const partsSpread = 20

// ttftPartsFiguresOf is ttftPartsFigures with ids prefixed by prefix and
// titles ending with suffix.
func ttftPartsFiguresOf(runs []*Run, prefix, suffix string) ([]*Figure, error) {
	var with []*Run
	for _, r := range runs {
		if r.Requests.Has(TTFTParts[0]) && r.Summary.Requests.Completed > 0 {
			with = append(with, r)
		}
	}
	if len(with) == 0 {
		return nil, nil
	}
	// Each part's completed values, sorted once for both percentiles.
	sorted := make([][][]float64, len(with))
	for i, r := range with {
		sorted[i] = make([][]float64, len(TTFTParts))
		for j, c := range TTFTParts {
			if !r.Requests.Has(c) {
				continue
			}
			v, err := completedColumn(r.Requests, c)
			if err != nil {
				return nil, fmt.Errorf("%s: per_request.csv: %w", r.Dir, err)
			}
			sort.Float64s(v)
			sorted[i][j] = v
		}
	}
	var figs []*Figure
	for _, q := range []struct {
		q    float64
		name string
	}{{0.5, "p50"}, {0.99, "p99"}} {
		names := make([]string, len(with))
		vals := make([][]float64, len(with))
		totals := make([]float64, len(with))
		for i, r := range with {
			names[i] = legendName(r)
			vals[i] = make([]float64, len(TTFTParts))
			for j := range TTFTParts {
				vals[i][j] = percentile(sorted[i][j], q.q)
				totals[i] += vals[i][j]
			}
		}
		lo, hi := math.Inf(1), 0.0
		for _, t := range totals {
			if t > 0 {
				lo = min(lo, t)
			}
			hi = max(hi, t)
		}
		shares := hi > 0 && hi > partsSpread*lo
		xlabel := "time"
		caption := "The " + q.name + " of each TTFT part over the completed requests (per_request.csv " + strings.Join(TTFTParts, ", ") + ", in the legend's order), stacked; a stack of percentiles is not the TTFT's " + q.name + "."
		if shares {
			xlabel = "share of the run's stacked total (%)"
			for i := range vals {
				names[i] += " (" + fmtMS(totals[i]) + ")"
				for j := range vals[i] {
					if totals[i] > 0 {
						vals[i][j] = 100 * vals[i][j] / totals[i]
					}
				}
			}
			caption += fmt.Sprintf(" The stacked totals range from %s to %s (more than %d×), so each bar shows the parts as shares of its run's total, given in its label.", fmtMS(lo), fmtMS(hi), partsSpread)
		}
		title := "TTFT parts, " + q.name + " of each part" + suffix
		p, err := stackedBars(title, xlabel, names, ttftPartLabels, vals)
		if err != nil {
			return nil, err
		}
		if shares {
			p.X.Min, p.X.Max = 0, 100
			p.X.Tick.Marker = percentTicks
		} else {
			p.X.Tick.Marker = msTicks{}
		}
		svg, err := render(p, figW, barHeight(len(with)))
		if err != nil {
			return nil, err
		}
		figs = append(figs, &Figure{ID: prefix + "ttft_parts_" + q.name, Title: title, SVG: svg,
			Caption: caption + missingCaption(runs, "per_request.csv")})
	}
	return figs, nil
}

// fmtMS formats milliseconds with a unit a reader takes in at a glance:
// "0.42 ms", "41 ms", "1.23 s", "5.6 min", "2.1 h".
func fmtMS(ms float64) string {
	a := math.Abs(ms)
	switch {
	case a == 0:
		return "0 ms"
	case a < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	case a < 1000:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	case a < 60_000:
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
	case a < 3_600_000:
		return strconv.FormatFloat(ms/60_000, 'f', 1, 64) + " min"
	}
	return strconv.FormatFloat(ms/3_600_000, 'f', 1, 64) + " h"
}

func fmtSeconds(s float64) string { return fmtMS(1000 * s) }

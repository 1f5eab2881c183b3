package report

import (
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// perKeySeries groups a time series table by key column and returns one
// line per key (t_ms in seconds on x) of column val, keys sorted.
func perKeySeries(t *Table, key, val string) ([]string, map[string]plotter.XYs, error) {
	series := map[string]plotter.XYs{}
	tm, err := column(t, "t_ms")
	if err != nil {
		return nil, nil, err
	}
	vs, err := column(t, val)
	if err != nil {
		return nil, nil, err
	}
	for i := range t.Rows {
		k := t.Str(i, key)
		series[k] = append(series[k], plotter.XY{X: tm[i] / 1000, Y: vs[i]})
	}
	keys := slices.Sorted(maps.Keys(series))
	return keys, series, nil
}

// maxSeriesLines is the most per-worker lines a time-series plot draws;
// beyond it the plot shows, per worker kind, the mean and the maximum
// over the workers in each time bin.
const maxSeriesLines = 12

func seriesFigure(r *Run, t *Table, file, key, val, id, title, ylabel, caption string) (*Figure, error) {
	if t == nil || len(t.Rows) == 0 || !t.Has(key) || !t.Has(val) || !t.Has("t_ms") {
		return nil, nil
	}
	keys, series, err := perKeySeries(t, key, val)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", r.Dir, file, err)
	}
	p := newPlot(title, "time (s, emulated)", ylabel)
	p.Y.Min = 0
	if err := addFaultSpans(p, r); err != nil {
		return nil, err
	}
	if len(keys) > maxSeriesLines {
		kinds := map[string]string{}
		if t.Has("kind") {
			for i := range t.Rows {
				kinds[t.Str(i, key)] = t.Str(i, "kind")
			}
		}
		byKind := map[string][]string{}
		for _, k := range keys {
			byKind[kinds[k]] = append(byKind[kinds[k]], k)
		}
		kindNames := slices.Sorted(maps.Keys(byKind))
		i := 0
		for _, kind := range kindNames {
			mean, mx := aggregateSeries(byKind[kind], series, seriesBins)
			label := fmt.Sprintf("%d %s", len(byKind[kind]), kind)
			if kind == "" {
				label = fmt.Sprintf("%d %ss", len(byKind[kind]), key)
			}
			if err := addLine(p, i, label+": mean", mean); err != nil {
				return nil, err
			}
			i++
			if err := addLine(p, i, label+": max", mx); err != nil {
				return nil, err
			}
			i++
		}
		caption += fmt.Sprintf(" %d series: the mean and the maximum over each kind's workers in %d time bins.", len(keys), seriesBins)
	} else {
		for i, k := range keys {
			if err := addLine(p, i, k, downsample(series[k], maxLinePoints)); err != nil {
				return nil, err
			}
		}
	}
	svg, err := render(p, figW, figH)
	if err != nil {
		return nil, err
	}
	return &Figure{ID: id, Title: title, SVG: svg, Caption: caption + faultCaption(r)}, nil
}

// seriesBins is the number of time bins of an aggregated series.
const seriesBins = 200

// aggregateSeries bins the sampled series of keys over their common time
// span and returns, per non-empty bin (at its middle), the mean and the
// maximum of the samples in it.
func aggregateSeries(keys []string, series map[string]plotter.XYs, bins int) (mean, mx plotter.XYs) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, k := range keys {
		for _, p := range series[k] {
			lo, hi = min(lo, p.X), max(hi, p.X)
		}
	}
	if hi < lo {
		return nil, nil
	}
	w := (hi - lo) / float64(bins)
	if w <= 0 {
		w = 1
	}
	sum := make([]float64, bins)
	n := make([]int, bins)
	top := make([]float64, bins)
	for _, k := range keys {
		for _, p := range series[k] {
			b := min(int((p.X-lo)/w), bins-1)
			sum[b] += p.Y
			if n[b] == 0 || p.Y > top[b] {
				top[b] = p.Y
			}
			n[b]++
		}
	}
	for b := range bins {
		if n[b] == 0 {
			continue
		}
		x := lo + (float64(b)+0.5)*w
		mean = append(mean, plotter.XY{X: x, Y: sum[b] / float64(n[b])})
		mx = append(mx, plotter.XY{X: x, Y: top[b]})
	}
	return mean, mx
}

// linkBins is the number of time bins of the link utilisation plot.
const linkBins = 150

// linkFigure plots links.csv's utilisation per NIC as the time-weighted
// mean utilisation in each of linkBins bins (a row holds until the NIC's
// next row), drawn as a filled step series: raw utilisation flips
// between 0 and 1 at every transfer and, downsampled, fills the plot
// solid. More than maxPanelLines NICs are drawn as their mean and the
// busiest NIC's. Nil without rows (a run without KV links).
func linkFigure(r *Run, id string) (*Figure, error) {
	t := r.Links
	if t == nil || len(t.Rows) == 0 || !t.Has("nic") || !t.Has("utilisation") || !t.Has("t_ms") {
		return nil, nil
	}
	keys, series, err := perKeySeries(t, "nic", "utilisation")
	if err != nil {
		return nil, fmt.Errorf("%s: links.csv: %w", r.Dir, err)
	}
	end := r.Summary.EmulatedSeconds
	for _, k := range keys {
		if s := series[k]; len(s) > 0 {
			end = max(end, s[len(s)-1].X)
		}
	}
	if end <= 0 {
		return nil, nil
	}
	w := end / linkBins
	binned := make(map[string][]float64, len(keys))
	for _, k := range keys {
		binned[k] = timeWeighted(series[k], w, linkBins, end)
	}
	peak := 0.0
	for _, k := range keys {
		for _, v := range binned[k] {
			peak = max(peak, v)
		}
	}
	title := "Link utilisation per NIC: " + r.Name
	p := newPlot(title, "time (s, emulated)", "utilisation (%)")
	// The axis reaches the busiest bin (at least 5 %, at most 100 %):
	// links busy a few per cent of the time stay visible.
	p.Y.Min, p.Y.Max = 0, min(100, max(5, math.Ceil(100*peak/5)*5))
	if p.Y.Max == 100 {
		p.Y.Tick.Marker = percentTicks
	}
	if err := addFaultSpans(p, r); err != nil {
		return nil, err
	}
	step := func(i int, name string, ys []float64, fill bool) error {
		xys := make(plotter.XYs, 0, len(ys)+1)
		for b, y := range ys {
			xys = append(xys, plotter.XY{X: float64(b) * w, Y: 100 * y})
		}
		xys = append(xys, plotter.XY{X: end, Y: 100 * ys[len(ys)-1]})
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.StepStyle = plotter.PostStep
		l.Color = colorOf(i)
		l.Width = vg.Points(1)
		if fill {
			c := palette[i%len(palette)]
			l.FillColor = color.NRGBA{c.R, c.G, c.B, 0x40}
		}
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	caption := fmt.Sprintf("links.csv utilisation of each NIC, time-weighted mean over %s bins (a row holds until the NIC's next row); the busiest bin is at %.1f %%.", fmtSeconds(w), 100*peak)
	if len(keys) > maxPanelLines {
		mean := make([]float64, linkBins)
		busiest := make([]float64, linkBins)
		for b := range linkBins {
			for _, k := range keys {
				mean[b] += binned[k][b] / float64(len(keys))
				busiest[b] = max(busiest[b], binned[k][b])
			}
		}
		if err := step(0, fmt.Sprintf("mean of %d NICs", len(keys)), mean, true); err != nil {
			return nil, err
		}
		if err := step(1, "busiest NIC in the bin", busiest, false); err != nil {
			return nil, err
		}
		caption += fmt.Sprintf(" %d NICs: their mean (filled) and the busiest one's in each bin.", len(keys))
	} else {
		for i, k := range keys {
			if err := step(i, k, binned[k], len(keys) <= 3); err != nil {
				return nil, err
			}
		}
	}
	svg, err := render(p, figW, figH)
	if err != nil {
		return nil, err
	}
	return &Figure{ID: id, Title: title, SVG: svg, Caption: caption + faultCaption(r)}, nil
}

// timeWeighted is the time-weighted mean of the step function xys (each
// point's Y holds from its X until the next point's, the last until end;
// 0 before the first) over bins of width w starting at 0.
func timeWeighted(xys plotter.XYs, w float64, bins int, end float64) []float64 {
	out := make([]float64, bins)
	for i, p := range xys {
		a, b := max(p.X, 0), end
		if i+1 < len(xys) {
			b = min(xys[i+1].X, end)
		}
		if b <= a {
			continue
		}
		for k := min(int(a/w), bins-1); k <= min(int(b/w), bins-1); k++ {
			lo, hi := float64(k)*w, float64(k+1)*w
			if k == bins-1 {
				hi = math.Inf(1)
			}
			if d := min(b, hi) - max(a, lo); d > 0 {
				out[k] += p.Y * d / w
			}
		}
	}
	for k := range out {
		out[k] = min(max(out[k], 0), 1)
	}
	return out
}

// routerBins is the number of time bins of the router counters plot.
const routerBins = 150

// routerWindowsFigure plots router_windows.csv's counters summed over
// routerBins time bins (the router's own windows are short: drawn one by
// one over a long run they fill the plot solid).
func routerWindowsFigure(r *Run, id string) (*Figure, error) {
	t := r.RouterWindows
	if t == nil || len(t.Rows) == 0 || !t.Has("t_ms") {
		return nil, nil
	}
	tm, err := column(t, "t_ms")
	if err != nil {
		return nil, fmt.Errorf("%s: router_windows.csv: %w", r.Dir, err)
	}
	end := 0.0
	for _, v := range tm {
		end = max(end, v/1000)
	}
	bins := routerBins
	if len(tm) <= routerBins || end <= 0 {
		bins = 0 // few windows: drawn as they are
	}
	w := end / float64(max(bins, 1))
	title := "Router counters per window: " + r.Name
	ylabel := "count per window"
	if bins > 0 {
		title = "Router counters: " + r.Name
		ylabel = "count per " + fmtSeconds(w)
	}
	p := newPlot(title, "time (s, emulated)", ylabel)
	p.Y.Min = 0
	if err := addFaultSpans(p, r); err != nil {
		return nil, err
	}
	for i, c := range []string{"requests", "direct", "migrations", "blacklists", "fallbacks", "rejections"} {
		if !t.Has(c) {
			continue
		}
		v, err := column(t, c)
		if err != nil {
			return nil, fmt.Errorf("%s: router_windows.csv: %w", r.Dir, err)
		}
		var xys plotter.XYs
		if bins == 0 {
			xys = make(plotter.XYs, len(v))
			for j := range v {
				xys[j] = plotter.XY{X: tm[j] / 1000, Y: v[j]}
			}
		} else {
			sum := make([]float64, bins+1)
			for j := range v {
				sum[min(int(tm[j]/1000/w), bins-1)] += v[j]
			}
			sum[bins] = sum[bins-1]
			xys = make(plotter.XYs, bins+1)
			for b := range sum {
				xys[b] = plotter.XY{X: float64(b) * w, Y: sum[b]}
			}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		if bins > 0 {
			l.StepStyle = plotter.PostStep
		}
		l.Color = colorOf(i)
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(c, l)
	}
	svg, err := render(p, figW, figH)
	if err != nil {
		return nil, err
	}
	caption := "router_windows.csv: requests routed and router events in each window."
	if bins > 0 {
		caption = fmt.Sprintf("router_windows.csv: requests routed and router events, summed over the %d windows in each %s bin.", len(tm), fmtSeconds(w))
	}
	return &Figure{ID: id, Title: title, SVG: svg, Caption: caption + faultCaption(r)}, nil
}

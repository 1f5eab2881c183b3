package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// stackedBars draws one horizontal bar per run, stacked by category.
// The first run is drawn at the top, as in the table.
func stackedBars(title, xlabel string, names []string, cats []string, vals [][]float64) (*plot.Plot, error) {
	p := newPlot(title, xlabel, "")
	p.Legend.Top = true
	var prev *plotter.BarChart
	n := len(names)
	for c, cat := range cats {
		v := make(plotter.Values, n)
		for r := range names {
			v[n-1-r] = vals[r][c]
		}
		b, err := plotter.NewBarChart(v, vg.Points(12))
		if err != nil {
			return nil, err
		}
		b.Horizontal = true
		b.LineStyle.Width = 0
		b.Color = colorOf(c)
		if prev != nil {
			b.StackOn(prev)
		}
		prev = b
		p.Add(b)
		p.Legend.Add(cat, b)
	}
	rev := make([]string, n)
	for r, name := range names {
		rev[n-1-r] = name
	}
	p.NominalY(rev...)
	return p, nil
}

func barHeight(n int) vg.Length {
	return max(figH/2, vg.Length(n)*vg.Points(18)+4*vg.Centimeter)
}

func modeMixFigure(runs []*Run) (*Figure, error) {
	names := make([]string, len(runs))
	vals := make([][]float64, len(runs))
	cats := append(append([]string(nil), Modes...), "no mode (failed)")
	for i, r := range runs {
		names[i] = r.Name
		vals[i] = make([]float64, len(cats))
		t := r.Summary.Requests.Total
		if t == 0 {
			continue
		}
		rest := t
		for j, m := range Modes {
			vals[i][j] = 100 * float64(r.Summary.Modes[m]) / float64(t)
			rest -= r.Summary.Modes[m]
		}
		vals[i][len(Modes)] = 100 * float64(max(rest, 0)) / float64(t)
	}
	p, err := stackedBars("Mode mix", "share of requests (%)", names, cats, vals)
	if err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max = 0, 100
	p.X.Tick.Marker = percentTicks
	svg, err := render(p, figW, barHeight(len(runs)))
	if err != nil {
		return nil, err
	}
	return &Figure{ID: "mode_mix", Title: "Mode mix", SVG: svg,
		Caption: "Share of each run's requests served in each mode (summary.json modes); requests that failed before a mode was decided are \"no mode\"."}, nil
}

// directShare bins requests by arrival into windows and returns each
// non-empty window's Direct share (per cent) at the window's middle, in
// seconds.
func directShare(t *Table, window float64) (plotter.XYs, error) {
	arr, err := column(t, "arrival_ms")
	if err != nil {
		return nil, err
	}
	tot := map[int]int{}
	dir := map[int]int{}
	for i, a := range arr {
		k := int(a / window)
		tot[k]++
		if t.Str(i, "mode") == "Direct" {
			dir[k]++
		}
	}
	keys := slices.Sorted(maps.Keys(tot))
	xys := make(plotter.XYs, 0, len(keys))
	for _, k := range keys {
		xys = append(xys, plotter.XY{X: (float64(k) + 0.5) * window / 1000, Y: 100 * float64(dir[k]) / float64(tot[k])})
	}
	return xys, nil
}

// niceWindow picks a window (ms) giving about 40 windows over span ms.
func niceWindow(span float64) float64 {
	w := span / 40
	for _, c := range []float64{1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000} {
		if w <= c {
			return c
		}
	}
	return 1800000
}

func directShareFigure(runs []*Run) (*Figure, error) {
	return directShareFigureOf(runs, "direct_share", "")
}

// directShareFigureOf draws the Direct share over time of the runs with
// per_request.csv (nil when none has it); the title ends with suffix.
func directShareFigureOf(runs []*Run, id, suffix string) (*Figure, error) {
	span := 0.0
	var with []*Run
	for _, r := range runs {
		if r.Requests == nil || len(r.Requests.Rows) == 0 {
			continue
		}
		with = append(with, r)
		arr, err := column(r.Requests, "arrival_ms")
		if err != nil {
			return nil, fmt.Errorf("%s: per_request.csv: %w", r.Dir, err)
		}
		for _, a := range arr {
			span = max(span, a)
		}
	}
	if len(with) == 0 {
		return nil, nil
	}
	w := niceWindow(span)
	title := fmt.Sprintf("Direct share over time (%g s windows)%s", w/1000, suffix)
	p := newPlot(title, "arrival time (s, emulated)", "Direct requests (%)")
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = percentTicks
	shared, err := sharedFaultSpans(with)
	if err != nil {
		return nil, err
	}
	if len(shared) > 0 {
		p.Add(faultSpansPlotter(shared))
	}
	// A big study shows the runs with the lowest and highest Direct share.
	keep := map[*Run]bool{}
	caption := "Requests arriving in each window (per_request.csv arrival_ms) served Direct, over all requests arriving in it."
	if len(with) > maxPanelLines {
		order := append([]*Run(nil), with...)
		share := func(r *Run) float64 {
			if r.Summary.Requests.Total == 0 {
				return 0
			}
			return float64(r.Summary.Modes["Direct"]) / float64(r.Summary.Requests.Total)
		}
		sort.SliceStable(order, func(a, b int) bool { return share(order[a]) < share(order[b]) })
		n := maxPanelLines / 2
		for _, r := range order[:n] {
			keep[r] = true
		}
		for _, r := range order[len(order)-n:] {
			keep[r] = true
		}
		caption += fmt.Sprintf(" %d of %d runs shown: the %d lowest and %d highest Direct shares (every run is in the table).", len(keep), len(with), n, n)
	}
	for i, r := range runs {
		if r.Requests == nil || len(r.Requests.Rows) == 0 || (len(keep) > 0 && !keep[r]) {
			continue
		}
		xys, err := directShare(r.Requests, w)
		if err != nil {
			return nil, err
		}
		if err := addLine(p, i, legendName(r), xys); err != nil {
			return nil, err
		}
	}
	svg, err := render(p, figW, figH)
	if err != nil {
		return nil, err
	}
	return &Figure{ID: id, Title: title, SVG: svg,
		Caption: caption + sharedFaultCaption(shared) + missingCaption(runs, "per_request.csv")}, nil
}

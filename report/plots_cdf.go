package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// column returns column name of t as numbers (rows whose cell does not
// parse are an error).
// The slice is parsed once per table and shared: callers must not
// change it.
func column(t *Table, name string) ([]float64, error) {
	if c, ok := t.floats[name]; ok {
		return c.v, c.err
	}
	out := make([]float64, len(t.Rows))
	var err error
	for i := range t.Rows {
		v, ferr := t.Float(i, name)
		if ferr != nil {
			out, err = nil, ferr
			break
		}
		out[i] = v
	}
	if t.floats == nil {
		t.floats = map[string]floatColumn{}
	}
	t.floats[name] = floatColumn{out, err}
	return out, err
}

// isFailed reports whether row i of per_request.csv is a failed request.
func isFailed(t *Table, i int) bool {
	f := t.Str(i, "failed")
	return f == "true" || f == "1"
}

// completedColumn is column name of the completed requests of t.
// The slice is new: the caller may sort it.
func completedColumn(t *Table, name string) ([]float64, error) {
	all, err := column(t, name)
	if err != nil {
		return nil, err
	}
	out := make([]float64, 0, len(t.Rows))
	for i, v := range all {
		if !isFailed(t, i) {
			out = append(out, v)
		}
	}
	return out, nil
}

// cdf returns the empirical CDF of the completed requests' column col, in
// per cent, with values clamped to at least floor (log axis).
func cdf(t *Table, col string, floor float64) (plotter.XYs, error) {
	vs, err := completedColumn(t, col)
	if err != nil {
		return nil, err
	}
	for i, v := range vs {
		vs[i] = max(v, floor)
	}
	sort.Float64s(vs)
	xys := make(plotter.XYs, 0, len(vs))
	for i, v := range vs {
		xys = append(xys, plotter.XY{X: v, Y: 100 * float64(i+1) / float64(len(vs))})
	}
	return thinCDF(xys, maxLinePoints), nil
}

func cdfFigure(runs []*Run, col, id, title string) (*Figure, error) {
	return cdfFigureOf(runs, nil, col, id, title)
}

// maxPanelLines is the most runs a line plot of several runs shows: a
// bigger study shows the baseline and the maxPanelLines/2-1 best and
// worst runs by the plotted figure (every run stays in the table).
const maxPanelLines = 8

// cdfFigureOf draws the CDF of column col for the runs with
// per_request.csv (baseline first among equals when the selection has to
// drop runs). Nil when no run has the file.
func cdfFigureOf(runs []*Run, baseline *Run, col, id, title string) (*Figure, error) {
	p := newPlot(title, "latency (log scale)", "requests ≤ x (%)")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = msTicks{log: true}
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = percentTicks
	type line struct {
		r   *Run
		i   int
		xys plotter.XYs
		p99 float64
	}
	var lines []line
	for i, r := range runs {
		if r.Requests == nil {
			continue
		}
		xys, err := cdf(r.Requests, col, 0.01)
		if err != nil {
			return nil, fmt.Errorf("%s: per_request.csv: %w", r.Dir, err)
		}
		if len(xys) == 0 {
			continue // no completed request: nothing to draw
		}
		p99 := 0.0
		if len(xys) > 0 {
			k := sort.Search(len(xys), func(j int) bool { return xys[j].Y >= 99 })
			p99 = xys[min(k, len(xys)-1)].X
		}
		lines = append(lines, line{r, i, xys, p99})
	}
	if len(lines) == 0 {
		return nil, nil
	}
	keep := make([]bool, len(lines))
	caption := "Empirical CDF over completed requests, one line per run; values below 0.01 ms are drawn at 0.01 ms."
	if len(lines) > maxPanelLines {
		order := make([]int, len(lines))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return lines[order[a]].p99 < lines[order[b]].p99 })
		n := maxPanelLines/2 - 1
		for _, k := range order[:n] {
			keep[k] = true
		}
		for _, k := range order[len(order)-n:] {
			keep[k] = true
		}
		for k, l := range lines {
			if l.r == baseline {
				keep[k] = true
			}
		}
		shown := 0
		for _, k := range keep {
			if k {
				shown++
			}
		}
		caption += fmt.Sprintf(" %d of %d runs shown: the baseline and the %d lowest and %d highest p99 (every run is in the table).", shown, len(lines), n, n)
	} else {
		for k := range keep {
			keep[k] = true
		}
	}
	for k, l := range lines {
		if !keep[k] {
			continue
		}
		if err := addLine(p, l.i, legendName(l.r), l.xys); err != nil {
			return nil, err
		}
	}
	svg, err := render(p, figW, figH)
	if err != nil {
		return nil, err
	}
	return &Figure{ID: id, Title: title, SVG: svg, Caption: caption + missingCaption(runs, "per_request.csv")}, nil
}

// legendName is r's name, with its status when it is not ok (its lines
// cover only the requests that ended).
func legendName(r *Run) string {
	if st := StatusOf(r.Summary); !st.OK() {
		return r.Name + " [" + st.Code + "]"
	}
	return r.Name
}

// missingCaption names the runs of runs left out of a plot for want of
// file ("" when none is).
func missingCaption(runs []*Run, file string) string {
	var names []string
	for _, r := range runs {
		if slices.Contains(r.Missing, file) {
			names = append(names, r.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf(" Not shown (no %s in the run directory): %s.", file, strings.Join(names, ", "))
}

package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is one rendered plot.
type Figure struct {
	ID      string // file name stem of its SVG file
	Title   string
	Caption string
	SVG     []byte
}

// TTFTParts are the optional per_request.csv columns whose sum is the
// TTFT, in the order they happen.
var TTFTParts = []string{"ttft_route_ms", "ttft_p_queue_ms", "ttft_prefill_ms", "ttft_transfer_ms",
	"ttft_kv_wait_ms", "ttft_d_prefill_ms", "ttft_first_token_ms"}

const (
	figW = 18 * vg.Centimeter
	figH = 10 * vg.Centimeter
)

func init() {
	// Sans-serif text in every plot (the SVG names the family; browsers
	// fall back to their own sans-serif font when it is not installed).
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
}

// percentTicks marks 0, 25, 50, 75 and 100.
var percentTicks = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}})

// plainTicks are gonum's default ticks labelled without trailing zeros
// ("25000", not "25000.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Title.TextStyle.Font = font.From(plot.DefaultFont, 12)
	p.Legend.TextStyle.Font = font.From(plot.DefaultFont, 8)
	p.Add(plotter.NewGrid())
	return p
}

// render draws p as SVG, w×h for the plot itself and its legend beside
// it on the right (a legend inside the data area hides lines once there
// are a dozen runs).
func render(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	leg := p.Legend
	p.Legend = plot.NewLegend()
	legW := vg.Length(0)
	c0 := draw.New(vgsvg.New(w, h))
	if r := leg.Rectangle(c0); r.Size().X > 0 {
		legW = r.Size().X + vg.Points(12)
	}
	cv := vgsvg.New(w+legW, h)
	dc := draw.New(cv)
	p.Draw(draw.Crop(dc, 0, -legW, 0, 0))
	if legW > 0 {
		leg.Top, leg.Left = true, true
		leg.XOffs, leg.YOffs = vg.Points(6), -vg.Points(24)
		leg.Draw(draw.Crop(dc, w, 0, 0, 0))
	}
	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// palette is Tableau 10: ten colours told apart on screen and in print;
// lines beyond ten cycle through it with dashes.
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff}, {0x76, 0xb7, 0xb2, 0xff},
	{0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff},
	{0x9c, 0x75, 0x5f, 0xff}, {0xba, 0xb0, 0xac, 0xff},
}

func colorOf(i int) color.Color { return palette[i%len(palette)] }

// maxLinePoints bounds the points drawn per line, so that the SVGs (and
// the report) stay small for long runs: a day sampled every second is
// 86,400 points per worker.
const maxLinePoints = 1000

// downsample keeps at most about n points of xys (in x order): the
// points are cut into n/2 consecutive groups and each group keeps its
// lowest and highest point, so spikes survive.
func downsample(xys plotter.XYs, n int) plotter.XYs {
	if len(xys) <= n {
		return xys
	}
	groups := n / 2
	out := make(plotter.XYs, 0, n)
	for g := range groups {
		lo, hi := g*len(xys)/groups, (g+1)*len(xys)/groups
		mn, mx := lo, lo
		for i := lo; i < hi; i++ {
			if xys[i].Y < xys[mn].Y {
				mn = i
			}
			if xys[i].Y > xys[mx].Y {
				mx = i
			}
		}
		a, b := min(mn, mx), max(mn, mx)
		out = append(out, xys[a])
		if b != a {
			out = append(out, xys[b])
		}
	}
	return out
}

// thinCDF keeps at most n points of a CDF, evenly spaced in rank, always
// with the last one.
func thinCDF(xys plotter.XYs, n int) plotter.XYs {
	if len(xys) <= n {
		return xys
	}
	out := make(plotter.XYs, 0, n+1)
	for k := range n {
		out = append(out, xys[k*len(xys)/n])
	}
	return append(out, xys[len(xys)-1])
}

func addLine(p *plot.Plot, i int, name string, xys plotter.XYs) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = colorOf(i)
	l.Dashes = plotutil.Dashes(i / len(palette))
	l.Width = vg.Points(1.2)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// column returns column name of t as numbers (rows whose cell does not
// parse are an error).
func column(t *Table, name string) ([]float64, error) {
	out := make([]float64, len(t.Rows))
	for i := range t.Rows {
		v, err := t.Float(i, name)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// cdf returns the empirical CDF of the completed requests' column col, in
// per cent, with values clamped to at least floor (log axis).
func cdf(t *Table, col string, floor float64) (plotter.XYs, error) {
	var vs []float64
	for i := range t.Rows {
		if f := t.Str(i, "failed"); f == "true" || f == "1" {
			continue
		}
		v, err := t.Float(i, col)
		if err != nil {
			return nil, err
		}
		vs = append(vs, max(v, floor))
	}
	sort.Float64s(vs)
	xys := make(plotter.XYs, 0, len(vs))
	for i, v := range vs {
		xys = append(xys, plotter.XY{X: v, Y: 100 * float64(i+1) / float64(len(vs))})
	}
	return thinCDF(xys, maxLinePoints), nil
}

func cdfFigure(runs []*Run, col, id, title string) (*Figure, error) {
	p := newPlot(title, "milliseconds (log scale)", "requests ≤ x (%)")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = percentTicks
	for i, r := range runs {
		xys, err := cdf(r.Requests, col, 0.01)
		if err != nil {
			return nil, fmt.Errorf("%s: per_request.csv: %w", r.Dir, err)
		}
		if err := addLine(p, i, r.Name, xys); err != nil {
			return nil, err
		}
	}
	svg, err := render(p, figW, figH)
	if err != nil {
		return nil, err
	}
	return &Figure{ID: id, Title: title, SVG: svg,
		Caption: "Empirical CDF over completed requests, one line per run; values below 0.01 ms are drawn at 0.01 ms."}, nil
}

// stackedBars draws one horizontal bar per run, stacked by category.
func stackedBars(title, xlabel string, names []string, cats []string, vals [][]float64) (*plot.Plot, error) {
	p := newPlot(title, xlabel, "")
	p.Legend.Top = true
	var prev *plotter.BarChart
	for c, cat := range cats {
		v := make(plotter.Values, len(names))
		for r := range names {
			v[r] = vals[r][c]
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
	p.NominalY(names...)
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
	keys := make([]int, 0, len(tot))
	for k := range tot {
		keys = append(keys, k)
	}
	slices.Sort(keys)
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
	span := 0.0
	for _, r := range runs {
		arr, err := column(r.Requests, "arrival_ms")
		if err != nil {
			return nil, fmt.Errorf("%s: per_request.csv: %w", r.Dir, err)
		}
		for _, a := range arr {
			span = max(span, a)
		}
	}
	w := niceWindow(span)
	title := fmt.Sprintf("Direct share over time (%g s windows)", w/1000)
	p := newPlot(title, "arrival time (s, emulated)", "Direct requests (%)")
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = percentTicks
	shared, err := sharedFaultSpans(runs)
	if err != nil {
		return nil, err
	}
	if len(shared) > 0 {
		p.Add(faultSpansPlotter(shared))
	}
	for i, r := range runs {
		xys, err := directShare(r.Requests, w)
		if err != nil {
			return nil, err
		}
		if err := addLine(p, i, r.Name, xys); err != nil {
			return nil, err
		}
	}
	svg, err := render(p, figW, figH)
	if err != nil {
		return nil, err
	}
	return &Figure{ID: "direct_share", Title: title, SVG: svg,
		Caption: "Requests arriving in each window (per_request.csv arrival_ms) served Direct, over all requests arriving in it." + sharedFaultCaption(shared)}, nil
}

// perKeySeries groups a time series table by key column and returns one
// line per key (t_ms in seconds on x) of column val, keys sorted.
func perKeySeries(t *Table, key, val string) ([]string, map[string]plotter.XYs, error) {
	series := map[string]plotter.XYs{}
	for i := range t.Rows {
		tm, err := t.Float(i, "t_ms")
		if err != nil {
			return nil, nil, err
		}
		v, err := t.Float(i, val)
		if err != nil {
			return nil, nil, err
		}
		k := t.Str(i, key)
		series[k] = append(series[k], plotter.XY{X: tm / 1000, Y: v})
	}
	keys := make([]string, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, series, nil
}

func seriesFigure(r *Run, t *Table, file, key, val, id, title, ylabel, caption string) (*Figure, error) {
	if t == nil || !t.Has(key) || !t.Has(val) || !t.Has("t_ms") {
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
	for i, k := range keys {
		if err := addLine(p, i, k, downsample(series[k], maxLinePoints)); err != nil {
			return nil, err
		}
	}
	svg, err := render(p, figW, figH)
	if err != nil {
		return nil, err
	}
	return &Figure{ID: id, Title: title, SVG: svg, Caption: caption + faultCaption(r)}, nil
}

// routerWindowsFigure plots router_windows.csv's counters per window.
func routerWindowsFigure(r *Run, id string) (*Figure, error) {
	t := r.RouterWindows
	if t == nil || !t.Has("t_ms") {
		return nil, nil
	}
	title := "Router counters per window: " + r.Name
	p := newPlot(title, "time (s, emulated)", "count per window")
	p.Y.Min = 0
	if err := addFaultSpans(p, r); err != nil {
		return nil, err
	}
	tm, err := column(t, "t_ms")
	if err != nil {
		return nil, fmt.Errorf("%s: router_windows.csv: %w", r.Dir, err)
	}
	for i, c := range []string{"requests", "direct", "migrations", "blacklists", "fallbacks", "rejections"} {
		if !t.Has(c) {
			continue
		}
		v, err := column(t, c)
		if err != nil {
			return nil, fmt.Errorf("%s: router_windows.csv: %w", r.Dir, err)
		}
		xys := make(plotter.XYs, len(v))
		for j := range v {
			xys[j] = plotter.XY{X: tm[j] / 1000, Y: v[j]}
		}
		if err := addLine(p, i, c, downsample(xys, maxLinePoints)); err != nil {
			return nil, err
		}
	}
	svg, err := render(p, figW, figH)
	if err != nil {
		return nil, err
	}
	return &Figure{ID: id, Title: title, SVG: svg,
		Caption: "router_windows.csv: requests routed and router events in each window." + faultCaption(r)}, nil
}

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
	var with []*Run
	for _, r := range runs {
		if r.Requests.Has(TTFTParts[0]) {
			with = append(with, r)
		}
	}
	if len(with) == 0 {
		return nil, nil
	}
	var figs []*Figure
	for _, q := range []struct {
		q    float64
		name string
	}{{0.5, "p50"}, {0.99, "p99"}} {
		names := make([]string, len(with))
		vals := make([][]float64, len(with))
		for i, r := range with {
			names[i] = r.Name
			vals[i] = make([]float64, len(TTFTParts))
			for j, c := range TTFTParts {
				if !r.Requests.Has(c) {
					continue
				}
				v, err := column(r.Requests, c)
				if err != nil {
					return nil, fmt.Errorf("%s: per_request.csv: %w", r.Dir, err)
				}
				sort.Float64s(v)
				vals[i][j] = percentile(v, q.q)
			}
		}
		title := "TTFT parts, " + q.name + " of each part"
		p, err := stackedBars(title, "milliseconds", names, TTFTParts, vals)
		if err != nil {
			return nil, err
		}
		svg, err := render(p, figW, barHeight(len(with)))
		if err != nil {
			return nil, err
		}
		figs = append(figs, &Figure{ID: "ttft_parts_" + q.name, Title: title, SVG: svg,
			Caption: "The " + q.name + " of each TTFT part (per_request.csv ttft_*_ms columns) stacked; a stack of percentiles is not the TTFT's " + q.name + "."})
	}
	return figs, nil
}

package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

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

// ttftPartLabels name TTFTParts in legends.
var ttftPartLabels = []string{"route", "P queue", "prefill", "KV transfer", "KV wait", "D prefill", "first token"}

const (
	figW = 15 * vg.Centimeter
	figH = 9 * vg.Centimeter
)

func init() {
	// Sans-serif text in every plot (the SVG names the family; browsers
	// fall back to their own sans-serif font when it is not installed).
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
}

// percentTicks marks 0, 25, 50, 75 and 100.
var percentTicks = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}})

// msTicks label an axis in milliseconds with time units ("100 ms",
// "10 s", "5 min"): gonum's log ticks (powers of ten, "1e+06") or its
// default ones.
type msTicks struct{ log bool }

func (m msTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	if m.log {
		ts = plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	} else {
		ts = plot.DefaultTicks{}.Ticks(lo, hi)
	}
	for i := range ts {
		switch {
		case ts[i].Label == "":
		case m.log && ts[i].Value >= 1000:
			// Powers of ten stay round in seconds ("1000 s", not "16.67 min").
			ts[i].Label = strconv.FormatFloat(ts[i].Value/1000, 'g', 6, 64) + " s"
		default:
			ts[i].Label = tickMS(ts[i].Value)
		}
	}
	return ts
}

// tickMS is a short label for ms: the unit fmtMS would pick, without
// trailing zeros.
func tickMS(ms float64) string {
	a := math.Abs(ms)
	unit, div := "ms", 1.0
	switch {
	case a >= 3_600_000:
		unit, div = "h", 3_600_000
	case a >= 60_000:
		unit, div = "min", 60_000
	case a >= 1000:
		unit, div = "s", 1000
	}
	return strconv.FormatFloat(ms/div, 'g', 4, 64) + " " + unit
}

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
	p.Legend.TextStyle.Font = font.From(plot.DefaultFont, 9)
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
	keys := make([]string, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
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
		kindNames := make([]string, 0, len(byKind))
		for k := range byKind {
			kindNames = append(kindNames, k)
		}
		sort.Strings(kindNames)
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

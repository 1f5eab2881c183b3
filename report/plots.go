package report

import (
	"bytes"
	"image/color"
	"math"
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

package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// TornadoBar is one parameter's effect on a figure: its value with the
// parameter at its low and at its high end (the others at their
// defaults).
type TornadoBar struct {
	Name      string
	Low, High float64
}

// Tornado draws a tornado plot as SVG: one horizontal bar per parameter
// from base to its low value (left colour) and from base to its high value
// (right colour), largest effect on top, with a line at base. Bars whose
// ends are NaN are left out; an empty plot is an error.
func Tornado(title, xlabel string, base float64, bars []TornadoBar) ([]byte, error) {
	var keep []TornadoBar
	for _, b := range bars {
		if !math.IsNaN(b.Low) && !math.IsNaN(b.High) {
			keep = append(keep, b)
		}
	}
	if len(keep) == 0 || math.IsNaN(base) {
		return nil, fmt.Errorf("report: tornado %q has no bar", title)
	}
	p := newPlot(title, xlabel, "")
	names := make([]string, len(keep))
	n := len(keep)
	for i, b := range keep {
		y := float64(n - 1 - i) // the first bar on top
		names[n-1-i] = b.Name
		for j, x := range []float64{b.Low, b.High} {
			if x == base {
				continue
			}
			poly, err := plotter.NewPolygon(plotter.XYs{{X: base, Y: y - 0.35}, {X: x, Y: y - 0.35}, {X: x, Y: y + 0.35}, {X: base, Y: y + 0.35}})
			if err != nil {
				return nil, err
			}
			poly.Color = colorOf(j)
			poly.LineStyle.Width = 0
			p.Add(poly)
			if i == 0 {
				p.Legend.Add(map[int]string{0: "parameter at its low value", 1: "parameter at its high value"}[j], poly)
			}
		}
	}
	baseLine, err := plotter.NewLine(plotter.XYs{{X: base, Y: -0.6}, {X: base, Y: float64(n) - 0.4}})
	if err != nil {
		return nil, err
	}
	baseLine.Width = vg.Points(1)
	p.Add(baseLine)
	p.NominalY(names...)
	p.Y.Tick.Label.Font.Size = 7
	return render(p, 16*vg.Centimeter, vg.Length(n)*0.55*vg.Centimeter+3*vg.Centimeter)
}

package report

import (
	"fmt"
	"image/color"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// faultCounts sums r's faults.csv by column name; nil when the run has no
// faults.csv or no rows in it.
func faultCounts(r *Run) (*FaultCounts, error) {
	t := r.Faults
	if t == nil || len(t.Rows) == 0 {
		return nil, nil
	}
	fc := &FaultCounts{Events: len(t.Rows)}
	for i := range t.Rows {
		for _, c := range []struct {
			col string
			dst *int
		}{{"retried", &fc.Retried}, {"failed", &fc.Failed}} {
			v, err := t.Float(i, c.col)
			if err != nil {
				return nil, fmt.Errorf("%s: faults.csv: %w", r.Dir, err)
			}
			*c.dst += int(v)
		}
	}
	return fc, nil
}

// faultTableColumns are the faults.csv columns shown in a run's fault
// table, in this order, when the file has them.
var faultTableColumns = []string{"id", "kind", "target", "node", "at_ms", "end_ms", "factor", "chaos", "detected_ms",
	"lost_requests", "lost_sessions", "retried", "failed", "reseeded", "recovery_ms"}

// faultTable is r's faults.csv as header and rows of the columns of
// faultTableColumns it has (nil without faults). Empty times show as
// "never", as docs/OUTPUTS.md defines them.
func faultTable(r *Run) ([]string, [][]string) {
	t := r.Faults
	if t == nil || len(t.Rows) == 0 {
		return nil, nil
	}
	var cols []string
	for _, c := range faultTableColumns {
		if t.Has(c) {
			cols = append(cols, c)
		}
	}
	rows := make([][]string, len(t.Rows))
	for i := range t.Rows {
		for _, c := range cols {
			v := t.Str(i, c)
			if v == "" && (c == "end_ms" || c == "detected_ms" || c == "recovery_ms") {
				v = "never"
			}
			rows[i] = append(rows[i], v)
		}
	}
	return cols, rows
}

// faultSpan is one fault's [At, End) in seconds of emulated time; End < 0
// when the fault never ended.
type faultSpan struct{ At, End float64 }

// faultSpans reads r's faults.csv at_ms and end_ms (nil without faults).
func faultSpans(r *Run) ([]faultSpan, error) {
	t := r.Faults
	if t == nil || len(t.Rows) == 0 || !t.Has("at_ms") {
		return nil, nil
	}
	spans := make([]faultSpan, len(t.Rows))
	for i := range t.Rows {
		at, err := t.Float(i, "at_ms")
		if err != nil {
			return nil, fmt.Errorf("%s: faults.csv: %w", r.Dir, err)
		}
		end := -1.0
		if s := t.Str(i, "end_ms"); s != "" {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: faults.csv: row %d column end_ms: %w", r.Dir, i+2, err)
			}
			end = v / 1000
		}
		spans[i] = faultSpan{At: at / 1000, End: end}
	}
	return spans, nil
}

// faultShade is the translucent red of a fault's span; faultEdge marks
// its start.
var (
	faultShade = color.NRGBA{0xe1, 0x57, 0x59, 0x24}
	faultEdge  = color.NRGBA{0xe1, 0x57, 0x59, 0xa0}
)

// faultSpans draws each fault as a translucent band over the plot's full
// height from its start to its end (to the right edge when it never
// ended) and a thin line at its start. It has no data range: it does not
// widen the axes, and parts outside them are clipped.
type faultSpansPlotter []faultSpan

func (fs faultSpansPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, f := range fs {
		if f.At > p.X.Max || (f.End >= 0 && f.End < p.X.Min) {
			continue
		}
		x0 := trX(max(f.At, p.X.Min))
		x1 := c.Max.X
		if f.End >= 0 && f.End < p.X.Max {
			x1 = trX(f.End)
		}
		if x1 > x0 {
			c.FillPolygon(faultShade, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		}
		if f.At >= p.X.Min {
			c.StrokeLine2(draw.LineStyle{Color: faultEdge, Width: vg.Points(0.75)}, x0, c.Min.Y, x0, c.Max.Y)
		}
	}
}

// addFaultSpans shades r's faults on p (nothing without faults).
func addFaultSpans(p *plot.Plot, r *Run) error {
	spans, err := faultSpans(r)
	if err != nil || len(spans) == 0 {
		return err
	}
	p.Add(faultSpansPlotter(spans))
	return nil
}

// faultCaption is the sentence added to the caption of a plot of r with
// its faults shaded.
func faultCaption(r *Run) string {
	if r.Faults == nil || len(r.Faults.Rows) == 0 {
		return ""
	}
	return " Red bands: the run's faults (faults.csv at_ms to end_ms; to the right edge when it never ended)."
}

// sharedFaultSpans are the fault spans of runs when every run has faults
// and all have the same ones (e.g. one chaos scenario under several
// routers), so that one set of bands on a plot of all runs is true of
// each; nil otherwise.
func sharedFaultSpans(runs []*Run) ([]faultSpan, error) {
	var first []faultSpan
	for i, r := range runs {
		s, err := faultSpans(r)
		if err != nil {
			return nil, err
		}
		if len(s) == 0 {
			return nil, nil
		}
		if i == 0 {
			first = s
			continue
		}
		if !slices.Equal(first, s) {
			return nil, nil
		}
	}
	return first, nil
}

func sharedFaultCaption(spans []faultSpan) string {
	if len(spans) == 0 {
		return ""
	}
	return " Red bands: the faults every run shares (faults.csv at_ms to end_ms; to the right edge when it never ended)."
}

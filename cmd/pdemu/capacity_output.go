package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/topology"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func readSummary(dir string) (metrics.Summary, error) {
	var s metrics.Summary
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

func printCapacity(w io.Writer, axis loadAxis, order []string, groups map[string]*capGroup) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\tpolicy\tcapacity (%s)\tattainment\tgoodput req/s\tfirst miss\tattainment there\n", axis.name)
	for _, k := range order {
		g := groups[k]
		pass, fail := g.bounds()
		pol := g.router
		if len(g.points) > 0 {
			pol = g.points[0].Policy
		}
		row := []string{scenarioLabel(g.scenario), pol, "none met the SLO", "-", "-", "-", "-"}
		if !math.IsNaN(pass) {
			p, _ := g.at(pass)
			row[2], row[3], row[4] = formatLoad(pass), fmt.Sprintf("%.1f%%", 100*p.Attainment), fmt.Sprintf("%.4g", p.GoodputRPS)
		}
		if !math.IsNaN(fail) {
			p, _ := g.at(fail)
			row[5], row[6] = formatLoad(fail), fmt.Sprintf("%.1f%%", 100*p.Attainment)
		} else if !math.IsNaN(pass) {
			row[5] = "none up to " + formatLoad(g.points[len(g.points)-1].Load) + " (raise --max)"
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
}

// writeCapacity writes capacity.json and capacity.svg.
func writeCapacity(out string, axis loadAxis, slo topology.SLO, sloFlag string, all []capPoint, order []string, groups map[string]*capGroup) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if sloFlag != "" {
		if s, err := topology.ParseSLO(slo, sloFlag); err == nil {
			slo = s
		}
	}
	doc := struct {
		Load   string     `json:"load"`
		Path   string     `json:"set_path"`
		SLO    string     `json:"slo"`
		Points []capPoint `json:"points"`
	}{axis.name, axis.path, slo.String(), all}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "capacity.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = "SLO attainment vs load (" + slo.String() + ")"
	p.X.Label.Text = axis.name
	p.Y.Label.Text = "share of requests meeting the SLO"
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for i, k := range order {
		g := groups[k]
		xys := make(plotter.XYs, len(g.points))
		for j, pt := range g.points {
			xys[j] = plotter.XY{X: pt.Load, Y: pt.Attainment}
			xmin, xmax = math.Min(xmin, pt.Load), math.Max(xmax, pt.Load)
		}
		if len(xys) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		c := capacityColors[i%len(capacityColors)]
		l.Color, s.Color = c, c
		p.Add(l, s)
		name := scenarioLabel(g.scenario)
		if len(g.points) > 0 {
			name += " / " + g.points[0].Policy
		}
		p.Legend.Add(name, l, s)
	}
	if xmax >= xmin {
		target, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: slo.Attainment}, {X: xmax, Y: slo.Attainment}})
		if err != nil {
			return err
		}
		target.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(target)
		p.Legend.Add(fmt.Sprintf("target %.0f%%", 100*slo.Attainment), target)
	}
	p.Legend.Left, p.Legend.Top = true, false
	wt, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, "svg")
	if err != nil {
		return err
	}
	fh, err := os.Create(filepath.Join(out, "capacity.svg"))
	if err != nil {
		return err
	}
	if _, err := wt.WriteTo(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// capacityColors are Tableau 10's first colours (the report's palette).
var capacityColors = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff}, {0x76, 0xb7, 0xb2, 0xff},
	{0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff},
}

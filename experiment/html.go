package experiment

import (
	"fmt"
	"html/template"
	"io"
	"sync"

	"github.com/pdemu/pdemu/report"
)

// htmlPage is report.html: the figure table with its verdict classes, the
// attribution tables, and with --sensitivity the sensitivity table and one
// tornado plot per figure (report.Tornado). Parsed on first use, not at
// every process start.
var htmlPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("exp").Parse(htmlSource))
})

const htmlSource = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font-family:sans-serif;max-width:1200px;margin:1em auto;font-size:14px}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}th{background:#eee}.miss{color:#b00}.figure{display:inline-block;margin:0.5em}</style>
</head><body>
<h1>{{.Title}}</h1>
{{range .Tables}}<h2>{{.Title}}</h2>
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>
{{end}}
{{if .Notes}}<h2>Attribution per figure</h2><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Plots}}<h2>Tornado plots (sensitivity)</h2>{{range .Plots}}<div class="figure">{{.}}</div>{{end}}{{end}}
</body></html>
`

// WriteHTML writes report.html.
func (r *Report) WriteHTML(w io.Writer) error {
	page := struct {
		Title  string
		Tables []Table
		Notes  []string
		Plots  []template.HTML
	}{Title: fmt.Sprintf("pdemu experiment %s (seeds %v): %s", r.Experiment, r.Seeds, countsLine(r.Verdicts))}
	ft := r.figureTable()
	ft.Title = "Published vs emulated"
	page.Tables = append(page.Tables, ft)
	page.Tables = append(page.Tables, r.Attribution...)
	for _, f := range r.Figures {
		for _, a := range f.Attribution {
			page.Notes = append(page.Notes, f.Name+" — "+a)
		}
	}
	if s := r.Sensitivity; s != nil {
		st := s.table()
		st.Title = fmt.Sprintf("Sensitivity (seed %d). %s", s.Seed, s.decidersLine())
		page.Tables = append(page.Tables, st)
		for _, fs := range s.Figures {
			var bars []report.TornadoBar
			for _, m := range fs.Moves[:min(10, len(fs.Moves))] {
				bars = append(bars, report.TornadoBar{Name: fmt.Sprintf("%s (%s)", m.Param, m.Label), Low: m.Low, High: m.High})
			}
			svg, err := report.Tornado(fs.Figure, "", fs.Base, bars)
			if err != nil {
				continue // no computable bar (e.g. no reseed in a variant)
			}
			page.Plots = append(page.Plots, template.HTML(svg)) //nolint:gosec // our own SVG
		}
	}
	return htmlPage().Execute(w, page)
}

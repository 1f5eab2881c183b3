package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// figureTable is the published-vs-emulated table.
func (r *Report) figureTable() Table {
	t := Table{Header: []string{"figure", "published", "emulated", "spread (seeds)", "tolerance", "verdict"}}
	for _, f := range r.Figures {
		t.Rows = append(t.Rows, []string{f.Name, f.Published, f.Emulated, f.Spread, f.Tolerance, f.Verdict})
	}
	return t
}

func (r *Report) runTable() Table {
	t := Table{Header: []string{"run", "seed", "requests", "failed", "Direct %", "P %", "TTFT p50 ms", "p90 ms", "p99 ms", "prefilled", "decoded", "migr", "fallb", "rej"}}
	for _, x := range r.Runs {
		t.Rows = append(t.Rows, []string{x.Name, fmt.Sprint(x.Seed), fmt.Sprint(x.Requests), fmt.Sprint(x.Failed),
			pct(x.DirectShare), pct(x.PShare), f1(x.TTFTp50), f1(x.TTFTp90), f1(x.TTFTp99),
			fmt.Sprint(x.Prefilled), fmt.Sprint(x.Decoded), fmt.Sprint(x.Migrations), fmt.Sprint(x.Fallbacks), fmt.Sprint(x.Rejections)})
	}
	return t
}

// WriteText writes the report as plain text.
func (r *Report) WriteText(w io.Writer) error { return r.write(w, false) }

// WriteMarkdown writes the report as markdown.
func (r *Report) WriteMarkdown(w io.Writer) error { return r.write(w, true) }

func (r *Report) write(w io.Writer, md bool) error {
	h := func(level int, s string) {
		if md {
			fmt.Fprintf(w, "%s %s\n\n", "######"[:level], s)
		} else {
			fmt.Fprintf(w, "%s\n%s\n\n", s, repeat('=', len([]rune(s))))
		}
	}
	h(1, fmt.Sprintf("pdemu experiment %s (seeds %v%s): %s", r.Experiment, r.Seeds, map[bool]string{true: ", short", false: ""}[r.Short], countsLine(r.Verdicts)))
	h(2, "Published vs emulated")
	writeTable(w, r.figureTable(), md)
	for _, f := range r.Figures {
		if len(f.Attribution) == 0 && len(f.DependsOn) == 0 && len(f.DecidedBy) == 0 && len(f.PartsMissed) == 0 {
			continue
		}
		var bits []string
		if len(f.PartsMissed) > 0 {
			bits = append(bits, "a miss because its parts miss: "+strings.Join(f.PartsMissed, "; "))
		}
		if len(f.DependsOn) > 0 {
			bits = append(bits, "fitted to it: "+strings.Join(f.DependsOn, ", "))
		}
		if len(f.DecidedBy) > 0 {
			bits = append(bits, "decided by: "+strings.Join(f.DecidedBy, ", "))
		}
		bits = append(bits, f.Attribution...)
		if md {
			fmt.Fprintf(w, "* **%s** (%s): %s\n", f.Name, f.Verdict, strings.Join(bits, " — "))
		} else {
			fmt.Fprintf(w, "- %s (%s): %s\n", f.Name, f.Verdict, strings.Join(bits, " — "))
		}
	}
	fmt.Fprintln(w)
	if len(r.Attribution) > 0 {
		h(2, "Attribution (computed from the runs)")
		for _, t := range r.Attribution {
			if t.Title != "" {
				fmt.Fprintf(w, "%s\n\n", t.Title)
			}
			writeTable(w, t, md)
		}
	}
	if r.Sensitivity != nil {
		h(2, fmt.Sprintf("Sensitivity (seed %d; every fitted and assumed parameter at its low and high value)", r.Sensitivity.Seed))
		fmt.Fprintf(w, "%s\n\n", r.Sensitivity.decidersLine())
		writeTable(w, r.Sensitivity.table(), md)
	}
	for _, s := range r.Sections {
		h(2, s.Title)
		for _, p := range s.Text {
			fmt.Fprintf(w, "%s\n\n", p)
		}
		for _, t := range s.Tables {
			writeTable(w, t, md)
		}
	}
	h(2, "Runs")
	writeTable(w, r.runTable(), md)
	if len(r.Notes) > 0 {
		h(2, "Notes")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteDir writes report.txt, report.md, report.json and report.html into dir (per-run
// outputs are written by Run itself when Options.OutDir is set).
func (r *Report) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, f func(io.Writer) error) error {
		fh, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := f(fh); err != nil {
			fh.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		return fh.Close()
	}
	return errors.Join(write("report.txt", r.WriteText), write("report.md", r.WriteMarkdown), write("report.json", r.WriteJSON),
		write("report.html", r.WriteHTML))
}

func repeat(c rune, n int) string {
	b := make([]rune, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func pct(x float64) string { return fmt.Sprintf("%.1f", 100*x) }
func f1(x float64) string  { return fmt.Sprintf("%.1f", x) }

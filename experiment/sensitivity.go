package experiment

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Sensitivity (issue 19, `--sensitivity`): every fitted and assumed
// parameter of Params with a documented range, at its low and at its high
// value, on the runs the figures read (KVC v2 over TCP and RDMA, KVC v1,
// 4-way DP; the first seed, every other parameter at its default). Per
// figure: the value at each end, and whether the verdict changes; the
// parameters that change it decide the verdict.

// Sensitivity is the report's sensitivity section.
type Sensitivity struct {
	Seed   uint64             `json:"seed"`
	Params []SensitivityParam `json:"params"`
	// Figures has one entry per figure of the table, in table order.
	Figures []FigureSensitivity `json:"figures"`
	// Deciders counts, per parameter, the figures whose verdict it decides
	// (most first; parameters that decide none are left out).
	Deciders []Decider `json:"deciders"`
}

// Decider is a parameter and how many figures' verdicts it decides.
type Decider struct {
	Param   string `json:"param"`
	Label   string `json:"label"`
	Figures int    `json:"figures"`
}

// SensitivityParam is one varied parameter.
type SensitivityParam struct {
	Name  string  `json:"name"`
	Label string  `json:"label"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
}

// FigureSensitivity is how far each parameter moves one figure.
type FigureSensitivity struct {
	Figure string  `json:"figure"`
	Base   float64 `json:"-"` // the figure on the same seed, every parameter at its default (JSON: base, null for NaN)
	BaseOK bool    `json:"base_in_tolerance"`
	Moves  []Move  `json:"moves"` // by decreasing |high − low| effect
	// DecidedBy are the parameters at whose low or high value the figure
	// crosses its tolerance (in or out).
	DecidedBy []string `json:"decided_by"`
}

// Move is one parameter's effect on one figure.
type Move struct {
	Param  string  `json:"param"`
	Label  string  `json:"label"`
	Low    float64 `json:"at_low"`
	High   float64 `json:"at_high"`
	LowOK  bool    `json:"low_in_tolerance"`
	HighOK bool    `json:"high_in_tolerance"`
	// Unfitted: the figure with a fitted parameter at its unfitted value
	// (NaN, omitted, for the others).
	Unfitted   float64 `json:"-"`
	UnfittedOK bool    `json:"-"`
}

// nullable is x, or nil for NaN (a figure with nothing to measure, e.g. no
// reseed in a variant): JSON has no NaN.
func nullable(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// MarshalJSON writes the ends as numbers or null, and at_unfitted only
// where there is one.
func (m Move) MarshalJSON() ([]byte, error) {
	out := struct {
		Param      string   `json:"param"`
		Label      string   `json:"label"`
		Low        *float64 `json:"at_low"`
		High       *float64 `json:"at_high"`
		LowOK      bool     `json:"low_in_tolerance"`
		HighOK     bool     `json:"high_in_tolerance"`
		AtUnfitted *float64 `json:"at_unfitted,omitempty"`
		UnfitOK    *bool    `json:"unfitted_in_tolerance,omitempty"`
	}{Param: m.Param, Label: m.Label, Low: nullable(m.Low), High: nullable(m.High), LowOK: m.LowOK, HighOK: m.HighOK}
	if !math.IsNaN(m.Unfitted) {
		out.AtUnfitted, out.UnfitOK = nullable(m.Unfitted), &m.UnfittedOK
	}
	return json.Marshal(out)
}

// MarshalJSON writes a NaN base as null.
func (f FigureSensitivity) MarshalJSON() ([]byte, error) {
	type plain FigureSensitivity
	out := struct {
		plain
		Base *float64 `json:"base"`
	}{plain: plain(f), Base: nullable(f.Base)}
	return json.Marshal(out)
}

// span is the largest distance of the ends from the base.
func (m Move) span(base float64) float64 {
	return math.Max(math.Abs(m.Low-base), math.Abs(m.High-base))
}

// sensitivityDefs are the sensitivity runs: for each varied parameter and
// end, the four runs the figures read. unfittedOnly keeps only the fitted
// parameters' unfitted values (every run of the experiment has those: they
// decide the depends-on-fitted class).
func sensitivityDefs(seed uint64, short, unfittedOnly bool) []runDef {
	var defs []runDef
	paper := sweSource(nil, short)
	v1 := map[string]string{"v1": "true", "tau_append": "2048"}
	for _, p := range Params() {
		if !p.Varied() {
			continue
		}
		ends := []struct {
			tag string
			v   float64
		}{{"low", p.Low}, {"high", p.High}}
		if unfittedOnly {
			ends = ends[:0]
		}
		if p.HasUnfitted {
			ends = append(ends, struct {
				tag string
				v   float64
			}{"unfitted", p.Unfitted})
		}
		for _, end := range ends {
			for _, r := range []struct {
				name, file string
				vars       map[string]string
			}{{"v2-tcp", "kvc-tcp", nil}, {"v2-rdma", "kvc-rdma", nil}, {"v1-tcp", "kvc-tcp", v1}, {"dp4", "dp4", nil}} {
				d := runDef{name: sensName(p.Name, end.tag, r.name), file: r.file, vars: r.vars, seed: seed, source: paper, cap: clientCap}
				defs = append(defs, p.apply(d, end.v, short))
			}
		}
	}
	return defs
}

func sensName(param, end, run string) string { return fmt.Sprintf("sens-%s-%s-%s", param, end, run) }

// sensitivity computes the section from the base runs (seed s0) and the
// sensitivity runs by name.
func sensitivity(seed uint64, base *seedRuns, by map[string]*runOut) *Sensitivity {
	s := &Sensitivity{Seed: seed}
	var varied []Param
	for _, p := range Params() {
		if p.Varied() {
			varied = append(varied, p)
			s.Params = append(s.Params, SensitivityParam{Name: p.Name, Label: p.Label, Low: p.Low, High: p.High})
		}
	}
	for _, d := range figDefs() {
		fs := FigureSensitivity{Figure: d.name, Base: d.value(base)}
		fs.BaseOK = d.ok(fs.Base)
		for _, p := range varied {
			// at is the figure at one end; ran is false when those runs are
			// not in by (only the unfitted values without --sensitivity).
			at := func(end string) (v float64, ok, ran bool) {
				k := &seedRuns{by[sensName(p.Name, end, "v2-tcp")], by[sensName(p.Name, end, "v2-rdma")],
					by[sensName(p.Name, end, "v1-tcp")], by[sensName(p.Name, end, "dp4")]}
				if k.kvc == nil || k.kvcR == nil || k.v1 == nil || k.dp == nil {
					return math.NaN(), false, false
				}
				v = d.value(k)
				return v, d.ok(v), true
			}
			m := Move{Param: p.Name, Label: p.Label, Unfitted: math.NaN()}
			var lowRan, highRan, unfitRan bool
			m.Low, m.LowOK, lowRan = at("low")
			m.High, m.HighOK, highRan = at("high")
			crosses := (lowRan && m.LowOK != fs.BaseOK) || (highRan && m.HighOK != fs.BaseOK)
			if p.HasUnfitted {
				m.Unfitted, m.UnfittedOK, unfitRan = at("unfitted")
				crosses = crosses || (unfitRan && m.UnfittedOK != fs.BaseOK)
			}
			if lowRan || highRan {
				fs.Moves = append(fs.Moves, m)
			}
			if crosses {
				fs.DecidedBy = append(fs.DecidedBy, p.Name)
			}
		}
		sort.SliceStable(fs.Moves, func(i, j int) bool { return fs.Moves[i].span(fs.Base) > fs.Moves[j].span(fs.Base) })
		s.Figures = append(s.Figures, fs)
	}
	for _, p := range varied {
		d := Decider{Param: p.Name, Label: p.Label}
		for _, fs := range s.Figures {
			for _, n := range fs.DecidedBy {
				if n == p.Name {
					d.Figures++
				}
			}
		}
		if d.Figures > 0 {
			s.Deciders = append(s.Deciders, d)
		}
	}
	sort.SliceStable(s.Deciders, func(i, j int) bool { return s.Deciders[i].Figures > s.Deciders[j].Figures })
	return s
}

// decidersLine is "large_append_prob (assumed) decides 11 of 23 verdicts, ...".
func (s *Sensitivity) decidersLine() string {
	if len(s.Deciders) == 0 {
		return "No parameter at either end of its range changes any verdict."
	}
	out := "Parameters that decide verdicts (the figure crosses its tolerance at the parameter's low, high or unfitted value): "
	for i, d := range s.Deciders {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s (%s) %d of %d", d.Param, d.Label, d.Figures, len(s.Figures))
	}
	return out + "."
}

// applySensitivity sets each figure's DecidedBy from s (r.Sensitivity, or
// the unfitted runs alone) and re-classes a figure that a fitted parameter
// decides as depends-on-fitted.
func (r *Report) applySensitivity(s *Sensitivity) {
	if s == nil {
		return
	}
	labels := map[string]string{}
	for _, p := range Params() {
		labels[p.Name] = p.Label
	}
	defs := figDefs()
	for i := range r.Figures {
		f := &r.Figures[i]
		fs := s.Figures[i]
		f.DecidedBy = fs.DecidedBy
		var fitted []string
		for _, n := range fs.DecidedBy {
			if labels[n] == LabelFitted {
				fitted = append(fitted, n)
			}
		}
		f.Verdict = verdictOf(defs[i], f.InTolerance, fitted)
	}
	missParts(r.Figures)
}

// sensitivityTable is the section's table: per figure, its base value and
// the parameters that move it most (top 5), each with its two ends.
func (s *Sensitivity) table() Table {
	t := Table{Header: []string{"figure", "base", "decided by", "largest moves (param: at low → at high)"}}
	defs := figDefs()
	for i, fs := range s.Figures {
		d := defs[i]
		var moves []string
		for _, m := range fs.Moves[:min(5, len(fs.Moves))] {
			mv := fmt.Sprintf("%s (%s): %s → %s", m.Param, m.Label, d.format(m.Low), d.format(m.High))
			if !math.IsNaN(m.Unfitted) {
				mv += fmt.Sprintf(", unfitted %s", d.format(m.Unfitted))
			}
			moves = append(moves, mv)
		}
		dec := "—"
		if len(fs.DecidedBy) > 0 {
			dec = strings.Join(fs.DecidedBy, ", ")
		}
		t.Rows = append(t.Rows, []string{fs.Figure, d.format(fs.Base), dec, strings.Join(moves, "; ")})
	}
	return t
}

package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

func paramRows(r *Run) [][2]string {
	p := r.Params
	if p == nil {
		return [][2]string{{"scenario", r.Summary.Scenario}, {"seed", strconv.FormatUint(r.Summary.Seed, 10)}, {"params.json", "absent (not a compare run)"}}
	}
	rows := [][2]string{{"scenario", p.Scenario}}
	if p.Router != "" {
		rows = append(rows, [2]string{"--router", p.Router})
	}
	for _, s := range p.Set {
		rows = append(rows, [2]string{"--set", s})
	}
	seed := "scenario's (" + strconv.FormatUint(r.Summary.Seed, 10) + ")"
	if p.Seed != nil {
		seed = strconv.FormatUint(*p.Seed, 10)
	}
	rows = append(rows, [2]string{"seed", seed})
	trace := "scenario's workload"
	if p.Trace != "" {
		trace = p.Trace
	}
	rows = append(rows, [2]string{"trace", trace})
	for _, k := range slices.Sorted(maps.Keys(p.Vars)) {
		rows = append(rows, [2]string{"--var", k + "=" + p.Vars[k]})
	}
	if p.MaxRequests > 0 {
		rows = append(rows, [2]string{"--max-requests", strconv.Itoa(p.MaxRequests)})
	}
	if len(p.Varied) > 0 {
		rows = append(rows, [2]string{"varied", strings.Join(p.Varied, ", ")})
	}
	return rows
}

func resultRows(r *Run) [][2]string {
	s := r.Summary
	st := StatusOf(s)
	status := st.Code
	if st.Detail != "" {
		status += ": " + st.Detail
	}
	rows := [][2]string{
		{"status", status},
		{"policy", s.Policy},
		{"requests", fmt.Sprintf("%d (completed %d, failed %d)", s.Requests.Total, s.Requests.Completed, s.Requests.Failed)},
		{"TTFT", fmt.Sprintf("p50 %s, p90 %s, p99 %s", fmtMS(s.TTFT.P50), fmtMS(s.TTFT.P90), fmtMS(s.TTFT.P99))},
		{"E2E", fmt.Sprintf("p50 %s, p90 %s, p99 %s", fmtMS(s.E2E.P50), fmtMS(s.E2E.P90), fmtMS(s.E2E.P99))},
		{"emulated", fmtSeconds(s.EmulatedSeconds)},
		{"imbalance", fmt.Sprintf("%.3f", imbalanceOf(r))},
	}
	var modes []string
	for _, m := range Modes {
		if n := s.Modes[m]; n > 0 {
			modes = append(modes, fmt.Sprintf("%s %d", m, n))
		}
	}
	rows = append(rows, [2]string{"modes", strings.Join(modes, ", ")})
	if f := sloOf(s); f.any() {
		var parts []string
		if f.Objective != "" {
			parts = append(parts, f.Objective)
		}
		if f.Attainment != nil {
			met := fmt.Sprintf("%.1f %% of requests met it", 100**f.Attainment)
			if f.Target != nil {
				met += fmt.Sprintf(" (target %g %%", 100**f.Target)
				if f.OK != nil && !*f.OK {
					met += ": missed"
				}
				met += ")"
			}
			parts = append(parts, met)
		}
		if f.SessionAttainment != nil {
			parts = append(parts, fmt.Sprintf("%.1f %% of sessions", 100**f.SessionAttainment))
		}
		if f.GoodputRPS != nil {
			parts = append(parts, fmt.Sprintf("goodput %.3g req/s", *f.GoodputRPS))
		}
		rows = append(rows, [2]string{"SLO", strings.Join(parts, ", ")})
	}
	if f := sloOf(s); f.Overloaded && f.Verdict != "" && !slices.Contains(s.Warnings, f.Verdict) {
		rows = append(rows, [2]string{"overload", f.Verdict})
	}
	for _, w := range s.Warnings {
		rows = append(rows, [2]string{"warning", w})
	}
	if rt := s.Router; rt != nil {
		rows = append(rows, [2]string{"router", fmt.Sprintf("migrations %d, blacklists %d, fallbacks %d, rejections %d",
			rt.Migrations, rt.Blacklists, rt.Fallbacks, rt.Rejections)})
	}
	return rows
}

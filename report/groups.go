package report

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// workload is one group of runs replaying the same workload: the same
// trace (by digest when summary.json has one, else by path), or each
// scenario's own generator.
type workload struct {
	Key, Label string
	Runs       []*Run
	Rows       []Row
	// Baseline is the index in Runs of the run the others are compared
	// with (-1: none usable), and BaselineNote says how it was chosen.
	Baseline     int
	BaselineNote string
}

// workloadOf is r's workload key and label.
func workloadOf(r *Run) (key, label string) {
	path := ""
	if r.Params != nil {
		path = r.Params.Trace
	}
	if path == "" && r.Summary.Trace.Path != "." {
		path = r.Summary.Trace.Path
	}
	if path == "" {
		return "generator", "generated workload (each scenario's own generator)"
	}
	key = "path:" + filepath.Clean(path)
	if d := r.Summary.Trace.Digest; d != "" {
		key = "digest:" + d
	}
	return key, "trace " + filepath.Base(filepath.Clean(path))
}

// configKey is what a run was, its workload aside: runs of two workloads
// with the same configKey are the same configuration on each.
func configKey(r *Run) string {
	if p := r.Params; p != nil {
		var vars []string
		for _, k := range slices.Sorted(maps.Keys(p.Vars)) {
			vars = append(vars, k+"="+p.Vars[k])
		}
		seed := "-"
		if p.Seed != nil {
			seed = fmt.Sprint(*p.Seed)
		}
		return strings.Join([]string{p.Scenario, p.Router, strings.Join(p.Set, ";"), seed, strings.Join(vars, ";"), fmt.Sprint(p.MaxRequests)}, "\x00")
	}
	return strings.Join([]string{r.Summary.Scenario, r.Summary.Policy, fmt.Sprint(r.Summary.Seed)}, "\x00")
}

// groupWorkloads groups runs (and their rows) by workload, in order of
// first appearance, and picks each group's baseline: the run named
// baseline when it is in the group; in the other groups, the run with
// the same configuration as it (see configKey); else the group's first
// ok run. baseline "" means the first ok run of all. A baseline that
// names no run, or a run that is not ok, is an error: a failed, partial
// or empty run is never a baseline.
func groupWorkloads(runs []*Run, rows []Row, baseline string) ([]*workload, error) {
	var groups []*workload
	byKey := map[string]*workload{}
	for i, r := range runs {
		k, label := workloadOf(r)
		g := byKey[k]
		if g == nil {
			g = &workload{Key: k, Label: label, Baseline: -1}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.Runs = append(g.Runs, r)
		g.Rows = append(g.Rows, rows[i])
	}
	ref := -1
	if baseline != "" {
		for i, r := range runs {
			if r.Name == baseline {
				ref = i
			}
		}
		if ref < 0 {
			names := make([]string, len(runs))
			for i, r := range runs {
				names[i] = r.Name
			}
			return nil, fmt.Errorf("report: --baseline %q is not one of the runs (%s)", baseline, strings.Join(names, ", "))
		}
		if st := rows[ref].Status; st != StatusOK {
			return nil, fmt.Errorf("report: --baseline %q is a %s run (%s): only a run with status ok can be a baseline", baseline, st, rows[ref].StatusDetail)
		}
	} else {
		for i := range runs {
			if rows[i].Status == StatusOK {
				ref = i
				break
			}
		}
	}
	for _, g := range groups {
		if ref < 0 {
			g.BaselineNote = "no baseline: no run has status ok"
			continue
		}
		want := configKey(runs[ref])
		for i, r := range g.Runs {
			if r == runs[ref] {
				g.Baseline, g.BaselineNote = i, "baseline: "+r.Name
				if baseline == "" {
					g.BaselineNote += " (the first run with status ok; --baseline RUN picks another)"
				} else {
					g.BaselineNote += " (--baseline)"
				}
				break
			}
		}
		if g.Baseline >= 0 {
			continue
		}
		for i, r := range g.Runs {
			if configKey(r) == want && g.Rows[i].Status == StatusOK {
				g.Baseline, g.BaselineNote = i, "baseline: "+r.Name+" (the baseline's configuration on this workload)"
				break
			}
		}
		if g.Baseline >= 0 {
			continue
		}
		for i := range g.Runs {
			if g.Rows[i].Status == StatusOK {
				g.Baseline, g.BaselineNote = i, "baseline: "+g.Runs[i].Name+" (the first run with status ok on this workload)"
				break
			}
		}
		if g.Baseline < 0 {
			g.BaselineNote = "no baseline: no run on this workload has status ok"
		}
	}
	return groups, nil
}

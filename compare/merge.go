package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pdemu/pdemu/report"
)

// entry is one run directory given to Merge (p nil: no plan).
type entry struct {
	dir string
	p   *report.Params
}

// MergeError is a set of run directories that is not one whole plan:
// runs of different plans, or rows missing or given twice. Problems
// names every row at fault; the CLI exits 2 on it (bad input).
type MergeError struct {
	Problems []string
}

func (e *MergeError) Error() string {
	return "cannot merge these runs into one study:\n  " + strings.Join(e.Problems, "\n  ")
}

// Merge orders run directories (each with summary.json, and params.json
// when compare wrote it) for one report. When no run records a plan
// (plain 'pdemu run' directories) they are returned as given. Otherwise
// every run that records a plan must come from one plan (same plan
// digest), and together they must hold each of its rows exactly once;
// they are returned in plan order, so a report merged from shards is the
// report of the whole plan, followed by the runs without a plan in the
// order given. Anything else is a *MergeError naming the rows: the runs
// of each plan, the rows given twice (with both directories),
// and the rows missing (by name when a plan.json beside a runs/ directory
// lists them).
func Merge(dirs []string) ([]string, error) {
	entries := make([]entry, 0, len(dirs))
	planned := 0
	var unfinished []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "summary.json")); errors.Is(err, fs.ErrNotExist) {
			// summary.json is renamed into place last, params.json after
			// it: a run that crashed or is still running.
			unfinished = append(unfinished, d)
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, report.ParamsFile))
		if errors.Is(err, fs.ErrNotExist) {
			entries = append(entries, entry{dir: d})
			continue
		}
		if err != nil {
			return nil, err
		}
		var p report.Params
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, &MergeError{Problems: []string{fmt.Sprintf("%s: %v", filepath.Join(d, report.ParamsFile), err)}}
		}
		if p.PlanDigest == "" || p.PlanIndex == nil {
			entries = append(entries, entry{dir: d})
			continue
		}
		planned++
		entries = append(entries, entry{dir: d, p: &p})
	}
	var problems []string
	if len(unfinished) > 0 {
		problems = append(problems, fmt.Sprintf("%d run(s) did not finish (no summary.json: a shard still running, or crashed; run it again): %s",
			len(unfinished), strings.Join(unfinished, ", ")))
	}
	if planned == 0 {
		if len(problems) > 0 {
			return nil, &MergeError{Problems: problems}
		}
		return dirs, nil
	}
	var unplanned []string
	byDigest := map[string][]entry{}
	var digests []string
	for _, e := range entries {
		if e.p == nil {
			unplanned = append(unplanned, e.dir)
			continue
		}
		if _, ok := byDigest[e.p.PlanDigest]; !ok {
			digests = append(digests, e.p.PlanDigest)
		}
		byDigest[e.p.PlanDigest] = append(byDigest[e.p.PlanDigest], e)
	}
	if len(digests) > 1 {
		for _, d := range digests {
			var names []string
			for _, e := range byDigest[d] {
				names = append(names, fmt.Sprintf("row %d (%s)", *e.p.PlanIndex, e.p.Name))
			}
			problems = append(problems, fmt.Sprintf("plan %s (%d rows): %d run(s) given: %s",
				short(d), byDigest[d][0].p.PlanSize, len(names), strings.Join(names, ", ")))
		}
		problems = append([]string{fmt.Sprintf("the runs come from %d different plans (different scenarios, --set, --router, --trace, seeds, --var or --max-requests); merge the shards of one plan at a time", len(digests))}, problems...)
		return nil, &MergeError{Problems: problems}
	}
	es := byDigest[digests[0]]
	size := es[0].p.PlanSize
	var plan *planDoc
	at := make([][]entry, size)
	for _, e := range es {
		i := *e.p.PlanIndex
		if e.p.PlanSize != size || i < 0 || i >= size {
			problems = append(problems, fmt.Sprintf("%s: row %d of a %d-row plan does not fit a plan of %d rows with the same digest (edited params.json?)",
				e.dir, i, e.p.PlanSize, size))
			continue
		}
		at[i] = append(at[i], e)
		if plan == nil {
			if d := readPlan(filepath.Dir(filepath.Dir(e.dir))); d != nil && d.Digest == digests[0] && len(d.Runs) == size {
				plan = d
			}
		}
	}
	problems = append(problems, sameInputs(at)...)
	var missing []string
	ordered := make([]string, 0, size)
	for i, list := range at {
		switch {
		case len(list) == 0:
			name := ""
			if plan != nil {
				name = " (" + plan.Runs[i].Name + ")"
			}
			missing = append(missing, fmt.Sprintf("%d%s", i, name))
		case len(list) > 1:
			var ds []string
			for _, e := range list {
				ds = append(ds, e.dir)
			}
			sort.Strings(ds)
			problems = append(problems, fmt.Sprintf("row %d (%s) is given %d times: %s", i, list[0].p.Name, len(list), strings.Join(ds, ", ")))
		default:
			ordered = append(ordered, list[0].dir)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("%d of the plan's %d rows are missing (a shard not run, failed or not given): rows %s",
			len(missing), size, strings.Join(missing, ", ")))
	}
	if len(problems) > 0 {
		return nil, &MergeError{Problems: problems}
	}
	return append(ordered, unplanned...), nil
}

func short(digest string) string {
	if len(digest) > len("sha256:")+12 {
		return digest[:len("sha256:")+12]
	}
	return digest
}

// sameInputs checks what the plan digest cannot see: that the rows of one
// scenario read the same scenario files (summary.json's scenario_digest)
// and, with one trace, the same trace files (trace.digest), and that
// every row was run by the same pdemu version. Shards run on
// other machines, from other images or checkouts, differ here; rows
// without a summary.json are left to the loader.
func sameInputs(at [][]entry) []string {
	type first struct {
		val string
		row int
	}
	digests, traces := map[string]first{}, map[string]first{}
	var version *first
	var problems []string
	for i, list := range at {
		for _, e := range list {
			b, err := os.ReadFile(filepath.Join(e.dir, "summary.json"))
			if err != nil {
				continue
			}
			var s struct {
				Version string `json:"pdemu_version"`
				Digest  string `json:"scenario_digest"`
				Trace   struct {
					Digest string `json:"digest"`
				} `json:"trace"`
			}
			if json.Unmarshal(b, &s) != nil {
				continue
			}
			if f, ok := digests[e.p.Scenario]; !ok {
				digests[e.p.Scenario] = first{s.Digest, i}
			} else if f.val != s.Digest {
				problems = append(problems, fmt.Sprintf("rows %d and %d (%s) read different files for scenario %s (scenario_digest %s and %s): the shards did not see the same scenario",
					f.row, i, e.p.Name, e.p.Scenario, short(f.val), short(s.Digest)))
			}
			tk := e.p.Scenario + "\x00" + e.p.Trace
			if f, ok := traces[tk]; !ok {
				traces[tk] = first{s.Trace.Digest, i}
			} else if f.val != s.Trace.Digest {
				problems = append(problems, fmt.Sprintf("rows %d and %d (%s) replayed different trace files (trace digest %s and %s): the shards did not see the same trace",
					f.row, i, e.p.Name, short(f.val), short(s.Trace.Digest)))
			}
			if version == nil {
				version = &first{s.Version, i}
			} else if version.val != s.Version {
				problems = append(problems, fmt.Sprintf("rows %d and %d (%s) were run by different pdemu versions (%s and %s)",
					version.row, i, e.p.Name, version.val, s.Version))
			}
		}
	}
	return problems
}

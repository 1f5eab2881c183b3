// Package compare runs every combination of scenarios × --set values ×
// seeds on the same workload and collects their run directories, a
// comparison table (compare.csv, compare.json) and an HTML report.
//
// Contract: Expand and Plan are pure (no I/O) and deterministic: the runs
// come in the order scenarios, then routers, then traces, then --set values (the first --set varying
// slowest), then seeds. Every run is independent: Execute loads, runs and
// writes each one alone, so with a virtual clock a run's outputs are
// byte-identical to running it alone and do not depend on Jobs. Loading
// (HCL, --set, --router) is the caller's, through Options.Load, so that
// this package does not depend on how overrides are applied.
//
// Sharding (shard.go, merge.go): Plan.Runs numbers every run and stamps
// it with the plan's size and digest; Options.Shard runs the rows with
// index mod N == I after loading every row; Merge orders the run
// directories of a plan's shards back into plan order and refuses (a
// *MergeError naming the rows) runs of different plans, rows missing or
// given twice, unfinished runs, and rows that read different scenario or
// trace files or ran on different pdemu versions.
package compare

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/report"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// Axis is one --set PATH=V[,V...]: a path and its values.
type Axis struct {
	Path   string
	Values []string
}

// ParseSet parses "PATH=V[,V...]". Values are split on commas (a value
// cannot contain one); empty values and duplicate values are errors.
func ParseSet(s string) (Axis, error) {
	path, vals, ok := strings.Cut(s, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return Axis{}, fmt.Errorf("--set %q: want PATH=VALUE[,VALUE...]", s)
	}
	a := Axis{Path: path}
	seen := map[string]bool{}
	for _, v := range strings.Split(vals, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return Axis{}, fmt.Errorf("--set %q: empty value", s)
		}
		if seen[v] {
			return Axis{}, fmt.Errorf("--set %q: value %q given twice", s, v)
		}
		seen[v] = true
		a.Values = append(a.Values, v)
	}
	return a, nil
}

// Expand parses sets and returns their cartesian product: each element is
// one combination as single "PATH=VALUE" strings in the order of sets (the
// first set varies slowest). No sets give one empty combination. A path
// given twice is an error.
func Expand(sets []string) ([][]string, []Axis, error) {
	axes := make([]Axis, 0, len(sets))
	seen := map[string]bool{}
	for _, s := range sets {
		a, err := ParseSet(s)
		if err != nil {
			return nil, nil, err
		}
		if seen[a.Path] {
			return nil, nil, fmt.Errorf("--set %s given twice: give its values as one comma list", a.Path)
		}
		seen[a.Path] = true
		axes = append(axes, a)
	}
	combos := [][]string{{}}
	for _, a := range axes {
		next := make([][]string, 0, len(combos)*len(a.Values))
		for _, c := range combos {
			for _, v := range a.Values {
				n := append(append(make([]string, 0, len(c)+1), c...), a.Path+"="+v)
				next = append(next, n)
			}
		}
		combos = next
	}
	return combos, axes, nil
}

// Plan is what to compare.
type Plan struct {
	Scenarios []string // scenario files or embedded names, at least one
	Set       []string // --set PATH=V[,V...]
	Seeds     int      // <= 1: each scenario's own seed; N > 1: seeds 1..N
	// Routers swap each scenario's routing policy (--router A[,B...]);
	// none = each scenario's own; several are one more axis.
	Routers []string
	// Traces replace each scenario's workload (--trace A[,B...]); none =
	// each scenario's own; several are one more axis of the comparison.
	Traces      []string
	Vars        map[string]string
	MaxRequests int // 0 = each scenario's
}

// Runs lists the plan's runs with their names and parameters.
func (p Plan) Runs() ([]report.Params, error) {
	if len(p.Scenarios) == 0 {
		return nil, errors.New("compare needs at least one scenario")
	}
	combos, axes, err := Expand(p.Set)
	if err != nil {
		return nil, err
	}
	var varied []string
	if len(p.Scenarios) > 1 {
		varied = append(varied, "scenario")
	}
	routers, err := axis("--router", p.Routers)
	if err != nil {
		return nil, err
	}
	if len(routers) > 1 {
		varied = append(varied, "router")
	}
	traces, err := axis("--trace", p.Traces)
	if err != nil {
		return nil, err
	}
	if len(traces) > 1 {
		varied = append(varied, "trace")
	}
	variedPath := map[string]bool{}
	for _, a := range axes {
		if len(a.Values) > 1 {
			varied = append(varied, a.Path)
			variedPath[a.Path] = true
		}
	}
	seeds := []*uint64{nil}
	if p.Seeds > 1 {
		varied = append(varied, "seed")
		seeds = seeds[:0]
		for i := 1; i <= p.Seeds; i++ {
			s := uint64(i)
			seeds = append(seeds, &s)
		}
	}
	var runs []report.Params
	used := map[string]int{}
	for _, sc := range p.Scenarios {
		for _, rt := range routers {
			for _, tr := range traces {
				for _, c := range combos {
					for _, seed := range seeds {
						parts := []string{scenarioStem(sc)}
						if rt != "" {
							// Even a single --router: the run is not the
							// scenario as written, and its name says so.
							parts = append(parts, "router="+rt)
						}
						if len(traces) > 1 {
							parts = append(parts, "trace="+traceStem(tr))
						}
						for _, kv := range c {
							if path, _, _ := strings.Cut(kv, "="); variedPath[path] {
								parts = append(parts, kv)
							}
						}
						if seed != nil {
							parts = append(parts, "seed="+strconv.FormatUint(*seed, 10))
						}
						name := report.SanitizeName(strings.Join(parts, "__"))
						if n := used[name]; n > 0 {
							used[name]++
							name = fmt.Sprintf("%s__%d", name, n+1)
						} else {
							used[name] = 1
						}
						runs = append(runs, report.Params{
							Name: name, Scenario: sc, Router: rt, Set: c, Seed: seed,
							Trace: tr, Vars: p.Vars, MaxRequests: p.MaxRequests, Varied: varied,
						})
					}
				}
			}
		}
	}
	setPlan(runs)
	return runs, nil
}

// axis returns vs, or one "" (the scenario's own) when empty; a value
// given twice is an error.
func axis(flag string, vs []string) ([]string, error) {
	if len(vs) == 0 {
		return []string{""}, nil
	}
	seen := map[string]bool{}
	for _, v := range vs {
		if seen[v] {
			return nil, fmt.Errorf("%s %s given twice", flag, v)
		}
		seen[v] = true
	}
	return vs, nil
}

// traceStem names a trace file or directory by its base name without
// extension.
func traceStem(s string) string {
	b := filepath.Base(filepath.Clean(s))
	if e := filepath.Ext(b); e != "" && e != b {
		b = strings.TrimSuffix(b, e)
	}
	return b
}

func scenarioStem(s string) string {
	return strings.TrimSuffix(filepath.Base(s), ".hcl")
}

// Options control Execute.
type Options struct {
	Out  string // output directory: Out/runs/<name>/, compare.csv, compare.json, report.html
	Jobs int    // runs at once (<= 0: 1)
	// Force replaces the outputs of earlier runs of the same names.
	Force bool
	// Load turns a run's parameters into a validated spec (scenario,
	// --var, --set, --router, seed, --max-requests, --trace applied).
	Load func(report.Params) (*topology.Spec, error)
	// Source opens the workload of a loaded spec (default actors.Source).
	Source func(*topology.Spec) (workload.Source, error)
	Logger hclog.Logger
	// RunDone, when set, is called (serialised) as each run ends.
	RunDone func(done, total int, name string, err error)
	// Progress, when set, is passed to each run's actors.Options.
	Progress func(name string, p actors.Progress)
	// Shard, when set with Count > 1, runs only its rows of the plan
	// (every row is still loaded and checked first) and writes no
	// compare.csv, compare.json nor report: Merge and WriteResults do
	// that once every shard has run.
	Shard *Shard
	// Outputs, when not nil, are the only files each run writes
	// (output.ParseOutputs).
	Outputs []string
}

// Result is a finished comparison.
type Result struct {
	Runs []report.Params // the runs executed (the shard's, when sharded)
	Rows []report.Row
	// Failed maps a run name to why it failed (its outputs are written
	// when the emulation produced any).
	Failed map[string]error
}

// RunDir is the directory of run name under out.
func RunDir(out, name string) string { return filepath.Join(out, "runs", name) }

// Execute loads every run first (so bad input stops everything before
// anything runs), then runs them, Jobs at a time, writes each run's
// directory and params.json, and finally compare.csv, compare.json and
// report.html from the run directories. A run that fails does not stop
// the others; the returned error joins every run's error.
func Execute(ctx context.Context, runs []report.Params, opts Options) (*Result, error) {
	if opts.Load == nil {
		return nil, errors.New("compare: Options.Load is required")
	}
	src := opts.Source
	if src == nil {
		src = func(s *topology.Spec) (workload.Source, error) { return actors.Source(s, false) }
	}
	specs := make([]*topology.Spec, len(runs))
	for i, r := range runs {
		s, err := opts.Load(r)
		if err != nil {
			return nil, &LoadError{Run: r.Name, Err: err}
		}
		if opts.Shard == nil || opts.Shard.Has(i) {
			specs[i] = s // another shard's row is checked, not kept
		}
	}
	if err := os.MkdirAll(filepath.Join(opts.Out, "runs"), 0o755); err != nil {
		return nil, err
	}
	if len(runs) > 0 && runs[0].PlanDigest != "" {
		if err := WritePlan(opts.Out, runs); err != nil {
			return nil, err
		}
	}
	sharded := opts.Shard != nil && opts.Shard.Count > 1
	if opts.Shard != nil {
		var sel []report.Params
		var selSpecs []*topology.Spec
		for i := range runs {
			if opts.Shard.Has(i) {
				sel, selSpecs = append(sel, runs[i]), append(selSpecs, specs[i])
			}
		}
		runs, specs = sel, selSpecs
	}
	jobs := max(opts.Jobs, 1)
	errs := make([]error, len(runs))
	var mu sync.Mutex
	done := 0
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i := range runs {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			errs[i] = runOne(ctx, runs[i], specs[i], src, opts)
			mu.Lock()
			done++
			if opts.RunDone != nil {
				opts.RunDone(done, len(runs), runs[i].Name, errs[i])
			}
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	res := &Result{Runs: runs, Failed: map[string]error{}}
	var dirs []string
	for i, r := range runs {
		if errs[i] != nil {
			res.Failed[r.Name] = errs[i]
		}
		if _, err := os.Stat(filepath.Join(RunDir(opts.Out, r.Name), "summary.json")); err == nil {
			dirs = append(dirs, RunDir(opts.Out, r.Name))
		}
	}
	runErr := joinRunErrors(runs, errs)
	if len(dirs) == 0 || sharded {
		return res, runErr
	}
	var failed []report.FailedRun // runs with no results: listed on the page
	for _, r := range runs {
		if e := res.Failed[r.Name]; e != nil && !slices.Contains(dirs, RunDir(opts.Out, r.Name)) {
			failed = append(failed, report.FailedRun{Name: r.Name, Error: e.Error()})
		}
	}
	rows, err := WriteResults(opts.Out, dirs, "pdemu compare", failed...)
	res.Rows = rows
	return res, errors.Join(runErr, err)
}

// LoadError is a run whose scenario did not load (bad input).
type LoadError struct {
	Run string
	Err error
}

func (e *LoadError) Error() string { return fmt.Sprintf("run %s: %v", e.Run, e.Err) }
func (e *LoadError) Unwrap() error { return e.Err }

// RunError is a run that failed.
type RunError struct {
	Run string
	Err error
}

func (e *RunError) Error() string { return fmt.Sprintf("run %s: %v", e.Run, e.Err) }
func (e *RunError) Unwrap() error { return e.Err }

func joinRunErrors(runs []report.Params, errs []error) error {
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, &RunError{Run: runs[i].Name, Err: err})
		}
	}
	return errors.Join(out...)
}

func runOne(ctx context.Context, p report.Params, spec *topology.Spec, open func(*topology.Spec) (workload.Source, error), opts Options) error {
	// An earlier run's summary (--force) must not stand for this one if
	// it fails before writing its own: the table would show a stale row.
	if err := os.Remove(filepath.Join(RunDir(opts.Out, p.Name), "summary.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	src, err := open(spec)
	if err != nil {
		return err
	}
	if c, ok := src.(interface{ Close() error }); ok {
		defer c.Close()
	}
	if opts.Outputs != nil && !slices.Contains(opts.Outputs, "routing_log.jsonl") {
		spec.Router.RoutingLog = false // no decision log kept for a file not written
	}
	ao := actors.Options{Logger: opts.Logger, Source: src}
	if opts.Progress != nil {
		name := p.Name
		ao.Progress = func(pr actors.Progress) { opts.Progress(name, pr) }
	}
	res, runErr := actors.Run(ctx, spec, ao)
	if res == nil {
		return runErr
	}
	dir := RunDir(opts.Out, p.Name)
	if err := output.Write(dir, res, output.WriteOptions{Force: opts.Force, Outputs: opts.Outputs}); err != nil {
		return errors.Join(runErr, err)
	}
	return errors.Join(runErr, report.WriteParams(dir, p))
}

// WriteResults reads the run directories dirs and writes out/compare.csv,
// out/compare.json, out/report.html and out/plots/*.svg. It returns the
// table's rows. failed are the runs that wrote no summary.json: the page
// lists them with their errors.
func WriteResults(out string, dirs []string, title string, failed ...report.FailedRun) ([]report.Row, error) {
	runs, err := report.LoadAll(dirs)
	if err != nil {
		return nil, err
	}
	rows, err := report.MakeRows(runs)
	if err != nil {
		return nil, err
	}
	write := func(name string, f func(*os.File) error) error {
		fh, err := os.Create(filepath.Join(out, name))
		if err != nil {
			return err
		}
		if err := f(fh); err != nil {
			fh.Close()
			return err
		}
		return fh.Close()
	}
	if err := write("compare.csv", func(f *os.File) error { return report.WriteCSV(f, rows) }); err != nil {
		return nil, err
	}
	if err := write("compare.json", func(f *os.File) error { return report.WriteJSON(f, rows) }); err != nil {
		return nil, err
	}
	page, err := report.BuildWith(report.Options{Title: title, BaseDir: out, Failed: failed}, runs)
	if err != nil {
		return nil, err
	}
	return rows, page.Write(filepath.Join(out, "report.html"), filepath.Join(out, "plots"))
}

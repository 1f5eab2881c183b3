package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pdemu/pdemu/compare"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/report"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

type compareFlags struct {
	scenarioFlags
	sloFlags
	out         string
	trace       string
	format      string
	seeds       int
	jobs        int
	maxRequests int
	skipBad     bool
	logLevel    string
	quiet       bool
	json        bool
	force       bool
	maxFailed   float64
	outputs     string    // --outputs (cmd_outputs.go)
	dist        distFlags // --shard, --emit (cmd_distrib.go)
}

func newCompareCmd() *cobra.Command {
	f := &compareFlags{}
	c := &cobra.Command{
		Use:   "compare SCENARIO... --out DIR",
		Short: "Run every combination of scenarios × --set values × seeds and report",
		Long: `Run every combination of the SCENARIOs (files or embedded names), the
values of each --set PATH=V[,V...] and the seeds, on the same workload,
--jobs runs at a time. Each run is deterministic (virtual clock) and its
outputs are byte-identical to running it alone with 'pdemu run'.

Writes DIR/runs/<name>/ (each run's usual outputs and params.json; the
name says what varied, e.g. 1p3d-mlx5__router.tau_append=4096__seed=2),
DIR/compare.csv and DIR/compare.json (one row per run: what varied,
requests, failed, mode shares, TTFT and E2E p50/p90/p99, prefilled and
cached tokens, transferred bytes, per-worker imbalance), DIR/report.html
(self-contained, opens offline) and DIR/plots/*.svg.

--seeds N runs seeds 1..N (default 1: each scenario's own seed). --trace
T1[,T2...] replaces every scenario's workload (keeping its replay
options) and --router P1[,P2...] its routing policy; several traces or
policies are one more axis each. --var and --max-requests apply to every
run. Every scenario is
loaded and checked before anything runs. A failed run does not stop the
others (exit 1 at the end).

Beyond one machine (docs/DISTRIBUTED.md): --shard I/N runs only the plan
rows with index mod N == I (every row is still loaded and checked first;
--shard env reads JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID or
PDEMU_SHARD_INDEX and its count); 'pdemu report DIR...' merges the shards
in plan order. --emit k8s-job prints a Kubernetes Indexed Job and its
merge Job, --emit slurm an sbatch --array script, instead of running.

` + exitCodesHelp,
		Example: `  pdemu compare 1p3d-mlx5 vanilla-pd-1p3d dp4 --out cmp
  pdemu compare 1p3d-mlx5 --set router.tau_append=1024,4096,8192,32768 --out tau
  pdemu compare 1p3d-mlx5 kvc-v1-1p3d --seeds 3 --var sessions=8 --jobs 2 --out seeds
  pdemu compare claude-code claude-code-vanilla claude-code-dp4 --trace ../shared/traces/weka-claude-code,swe.jsonl --out study
  pdemu compare claude-code --router kvc,vanilla,sticky_only --max-requests 1000 --out cc
  pdemu compare 1p3d-mlx5 --router vanilla --set workload.loop=open,closed --out loop --json`,
		RunE: func(cmd *cobra.Command, args []string) error { return cmdCompare(cmd, f, args) },
	}
	fl := f.planCommand(c, "compare")
	fl.StringVar(&f.trace, "trace", "", "replay this trace instead of each scenario's workload; a comma list T1,T2 compares the traces")
	fl.IntVar(&f.seeds, "seeds", 1, "run seeds 1..N (1 = each scenario's own seed)")
	f.registerPlanFlags(fl)
	fl.BoolVar(&f.json, "json", false, "print compare.json's rows on stdout instead of the table")
	fl.BoolVar(&f.force, "force", false, "replace the outputs of earlier runs under --out/runs")
	fl.Float64Var(&f.maxFailed, "max-failed", output.DefaultMaxFailed, "exit 3 when a run failed more than this share of its requests (negative: no limit)")
	f.dist.register(c)
	registerOutputs(c, &f.outputs)
	f.scenarioFlags.register(c, "override an HCL attribute in every run, sweeping comma-separated values: --set PATH=V[,V...] (repeatable)")
	c.Flags().Lookup("router").Usage = "swap the routing policy (with its defaults; the scenario's own policy keeps its settings); a comma list P1,P2 compares the policies"
	return c
}

// planCommand makes c (compare, capacity) a command running a plan over
// one or more SCENARIOs: its arguments and their completion, the SLO
// flags and --out (default pdemu-NAME). It returns c's flags for the
// command's own.
func (f *compareFlags) planCommand(c *cobra.Command, name string) *pflag.FlagSet {
	c.Args = atLeastOne(name, "SCENARIO", "see 'pdemu scenarios'")
	c.ValidArgsFunction = completeScenarios
	f.sloFlags.register(c)
	fl := c.Flags()
	fl.StringVar(&f.out, "out", "pdemu-"+name, "output directory")
	return fl
}

// registerPlanFlags registers the flags that mean the same for every
// command running a plan of runs (compare, capacity).
func (f *compareFlags) registerPlanFlags(fl *pflag.FlagSet) {
	fl.StringVar(&f.format, "format", "", "trace format for --trace ("+strings.Join(workload.Formats(), ", ")+"; default: detect)")
	fl.IntVar(&f.jobs, "jobs", runtime.NumCPU(), "runs at once")
	fl.IntVar(&f.maxRequests, "max-requests", 0, "stop each run after this many requests (0 = the scenario's setting)")
	fl.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed trace records instead of stopping")
	fl.StringVar(&f.logLevel, "log-level", "warn", "trace | debug | info | warn | error")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress and no table on stdout")
}

// planSetup reads what every command running a plan starts from: the
// logger (--log-level), --var and --router.
func (f *compareFlags) planSetup(stderr io.Writer) (hclog.Logger, map[string]string, []string, error) {
	log, err := newLogger(f.logLevel, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	vars, err := f.varMap()
	if err != nil {
		return nil, nil, nil, err
	}
	routers, err := commaList("--router", f.router)
	if err != nil {
		return nil, nil, nil, err
	}
	return log, vars, routers, nil
}

func cmdCompare(cmd *cobra.Command, f *compareFlags, scens []string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.seeds < 1 {
		return usageErr("--seeds must be >= 1, got %d", f.seeds)
	}
	if f.jobs < 1 {
		return usageErr("--jobs must be >= 1, got %d", f.jobs)
	}
	if f.maxRequests < 0 {
		return usageErr("--max-requests must be >= 0")
	}
	log, vars, routers, err := f.planSetup(stderr)
	if err != nil {
		return err
	}
	traces, err := commaList("--trace", f.trace)
	if err != nil {
		return err
	}
	plan := compare.Plan{Scenarios: scens, Set: f.set, Seeds: f.seeds, Routers: routers, Traces: traces, Vars: vars, MaxRequests: f.maxRequests}
	runs, err := plan.Runs()
	if err != nil {
		return badInput(err)
	}
	shard, err := f.dist.parseShard()
	if err != nil {
		return err
	}
	outputs, err := output.ParseOutputs(f.outputs)
	if err != nil {
		return usageErr("%v", err)
	}
	if f.dist.emit != "" {
		return emitPlan(cmd, f, scens, runs)
	}
	traceSet := cmd.Flags().Changed("trace")
	var format *string
	if cmd.Flags().Changed("format") {
		format = &f.format
	}
	warnedWall := false // Execute loads the runs one after the other
	swapSaid := map[string]bool{}
	// A shard loads and checks the whole plan but writes only its own
	// runs' directories: only those must be usable (the others may hold
	// the outputs of the shards that ran before it).
	mine := map[string]bool{}
	for _, r := range runs {
		mine[r.Name] = true
	}
	if shard != nil {
		clear(mine)
		for _, r := range shard.Select(runs) {
			mine[r.Name] = true
		}
	}
	load := func(p report.Params) (*topology.Spec, error) {
		spec, err := loadPlanRun(p, traceSet, format)
		if err != nil {
			return nil, err
		}
		if sw := spec.RouterSwap; sw != nil && !swapSaid[p.Scenario+"\x00"+p.Router] {
			swapSaid[p.Scenario+"\x00"+p.Router] = true
			fmt.Fprintf(stderr, "pdemu: %s: %s\n", scenarioLabel(p.Scenario), sw)
		}
		if err := f.sloFlags.apply(spec); err != nil {
			return nil, err
		}
		for _, w := range noEffectWarnings(spec) {
			if !swapSaid[w] { // once per distinct warning
				swapSaid[w] = true
				fmt.Fprintf(stderr, "pdemu: warning: run %s: %s\n", p.Name, w)
			}
		}
		if err := checkBeforeRun(spec, p, f, traceSet, mine[p.Name], stderr); err != nil {
			return nil, err
		}
		if spec.Workload.Clock == topology.ClockWall && f.jobs > 1 && !warnedWall {
			warnedWall = true
			fmt.Fprintf(stderr, "pdemu: warning: %s runs on the wall clock: runs in parallel (--jobs %d) compete for the CPU and fire their timers later; --jobs 1 measures each alone\n", p.Name, f.jobs)
		}
		return spec, nil
	}
	nrun := len(runs)
	if shard != nil {
		nrun = len(shard.Select(runs))
	}
	prog := newProgress(stderr, f.quiet, nrun, "runs")
	opts := compare.Options{
		Out: f.out, Jobs: f.jobs, Load: load, Logger: log, Force: f.force, Shard: shard, Outputs: outputs,
		Source: func(s *topology.Spec) (workload.Source, error) { return openSource(s, f.skipBad, traceSet) },
	}
	if prog != nil {
		opts.RunDone, opts.Progress = prog.onRunDone, prog.onRunRequest
		fmt.Fprintf(stderr, "pdemu: compare: %d runs, %d at a time, into %s%s\n", nrun, f.jobs, f.out, shardNote(shard, len(runs)))
	}
	start := time.Now()
	enterCancellable()
	res, err := compare.Execute(cmd.Context(), runs, opts)
	prog.finish()
	var le *compare.LoadError
	if errors.As(err, &le) {
		return badInput(err)
	}
	if res == nil {
		return err
	}
	if shard != nil && shard.Count > 1 {
		return shardDone(stdout, f, shard, runs, res, err)
	}
	rows := withFailedRuns(res)
	if f.json {
		if werr := report.WriteJSON(stdout, rows); werr != nil {
			return errors.Join(err, werr)
		}
	} else if !f.quiet {
		printCompare(stdout, rows)
		fmt.Fprintf(stdout, "%s in %s; outputs in %s (compare.csv, compare.json, report.html, runs/)\n",
			runCounts(res), time.Since(start).Round(time.Millisecond), f.out)
	}
	if err != nil {
		return err
	}
	if err := compareTooManyFailed(f.out, res, f.maxFailed); err != nil {
		return err
	}
	return compareSLOCheck(f, res)
}

// commaList splits a comma-separated flag value ("" = none).
func commaList(flag, v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var out []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x == "" {
			return nil, usageErr("%s %q: empty value in the list", flag, v)
		}
		out = append(out, x)
	}
	return out, nil
}

// compareTooManyFailed applies the --max-failed check (exit 3) to each run's summary.
func compareTooManyFailed(out string, res *compare.Result, maxFailed float64) error {
	var errs []error
	for _, r := range res.Runs {
		b, err := os.ReadFile(filepath.Join(compare.RunDir(out, r.Name), "summary.json"))
		if err != nil {
			return err
		}
		var s metrics.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if err := tooManyFailed(s, maxFailed); err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", r.Name, err))
		}
	}
	if len(errs) > 0 {
		return &exitError{exitTooManyFail, errors.Join(errs...)}
	}
	return nil
}

func printCompare(w interface{ Write([]byte) (int, error) }, rows []report.Row) {
	width := 3
	for _, r := range rows {
		width = max(width, len(r.Run))
	}
	fmt.Fprintf(w, "%-*s %-7s %8s %6s %7s %9s %9s %9s %9s %6s %7s %9s\n", width, "run", "status", "requests", "failed", "direct",
		"ttft p50", "ttft p99", "e2e p50", "e2e p99", "imbal", "slo met", "goodput/s")
	for _, r := range rows {
		if r.Status == report.StatusError && r.Requests == 0 {
			// No result: the run's error instead of figures.
			fmt.Fprintf(w, "%-*s %-7s %s\n", width, r.Run, "FAILED", r.StatusDetail)
			continue
		}
		att, gp := "-", "-"
		if r.SLO != nil && r.SLO.Attainment != nil {
			att = fmt.Sprintf("%.1f%%", 100**r.SLO.Attainment)
		}
		if r.SLO != nil && r.SLO.GoodputRPS != nil {
			gp = fmt.Sprintf("%.4g", *r.SLO.GoodputRPS)
		}
		fmt.Fprintf(w, "%-*s %-7s %8d %6d %6.1f%% %9.1f %9.1f %9.1f %9.1f %6.2f %7s %9s\n", width, r.Run, r.Status, r.Requests, r.Failed,
			100*r.ModeShare["Direct"], r.TTFT.P50, r.TTFT.P99, r.E2E.P50, r.E2E.P99, r.Imbalance, att, gp)
	}
}

// withFailedRuns is res's rows with, in run order, a row for each run that
// failed without writing a summary: its error, no figures (a failed run
// never shows a number, stale or not).
func withFailedRuns(res *compare.Result) []report.Row {
	have := map[string]report.Row{}
	for _, r := range res.Rows {
		have[r.Run] = r
	}
	var out []report.Row
	for _, p := range res.Runs {
		if r, ok := have[p.Name]; ok {
			if e := res.Failed[p.Name]; e != nil && r.Status == report.StatusOK {
				r.Status, r.StatusDetail = report.StatusError, e.Error()
			}
			out = append(out, r)
			delete(have, p.Name)
			continue
		}
		if e := res.Failed[p.Name]; e != nil {
			out = append(out, report.Row{Run: p.Name, Scenario: p.Scenario, Policy: p.Router, Set: p.Set, Trace: p.Trace,
				Status: report.StatusError, StatusDetail: e.Error()})
		}
	}
	for _, r := range res.Rows { // rows of no planned run (none expected)
		if _, ok := have[r.Run]; ok {
			out = append(out, r)
		}
	}
	return out
}

// runCounts is the closing line's count of runs: completed and failed.
func runCounts(res *compare.Result) string {
	failed := len(res.Failed)
	return fmt.Sprintf("%d runs (%d completed, %d failed)", len(res.Runs), len(res.Runs)-failed, failed)
}

// compareSLOCheck applies --min-attainment and --fail-overloaded to every
// run (exit 3).
func compareSLOCheck(f *compareFlags, res *compare.Result) error {
	var errs []error
	for _, r := range res.Runs {
		b, err := os.ReadFile(filepath.Join(compare.RunDir(f.out, r.Name), "summary.json"))
		if err != nil {
			continue // a failed run: reported already
		}
		var s metrics.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if err := f.sloFlags.check(s); err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", r.Name, errors.Unwrap(err)))
		}
	}
	if len(errs) > 0 {
		return &exitError{exitTooManyFail, errors.Join(errs...)}
	}
	return nil
}

// loadPlanRun loads one run of a plan (compare's, capacity's): its
// scenario with the run's --var, --set and --router, then the run's
// seed, --max-requests and (when --trace was given) trace over its
// workload. format is --format when given.
func loadPlanRun(p report.Params, traceSet bool, format *string) (*topology.Spec, error) {
	trace := ""
	if traceSet {
		trace = p.Trace
	}
	spec, err := loadSpecTrace(p.Scenario, p.Vars, p.Set, p.Router, trace)
	if err != nil {
		return nil, err
	}
	o := workloadOverrides{seed: p.Seed, format: format}
	if p.MaxRequests > 0 {
		o.maxRequests = &p.MaxRequests
	}
	if traceSet {
		o.trace = &p.Trace
	}
	if err := o.apply(spec); err != nil {
		return nil, err
	}
	return spec, nil
}

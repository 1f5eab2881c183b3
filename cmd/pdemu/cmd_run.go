package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/serve"
	"github.com/pdemu/pdemu/workload"
)

// sourceOf opens a spec's workload (a variable so tests can count opens).
var sourceOf = actors.Source

// tooManyFailed is exit code 3 when a run's failed share is above
// maxFailed (output.Check's rule, applied to a summary: compare reads each
// run's summary.json).
func tooManyFailed(s metrics.Summary, maxFailed float64) error {
	return output.Check(&actors.Result{Summary: s}, output.CheckOptions{MaxFailed: maxFailed, AllowEmpty: true})
}

// runFlags are the flags of run (compare shares most of them).
type runFlags struct {
	scenarioFlags
	sloFlags
	out         string
	seed        uint64
	maxRequests int
	trace       string
	format      string
	clock       string
	timeScale   float64
	logLevel    string
	wallTimeout time.Duration
	quiet       bool
	skipBad     bool
	force       bool
	outputs     string
	maxFailed   float64
	strictWall  bool
	// run only: live /metrics of a wall-clock run.
	metricsListen string
	allowRemote   bool
	metricsLinger time.Duration
	// run only: Go profiles of the run itself (go tool pprof FILE).
	cpuProfile string
	memProfile string
}

func (f *runFlags) overrides(c *cobra.Command) workloadOverrides {
	var o workloadOverrides
	fl := c.Flags()
	ifChanged(fl, "seed", &o.seed, &f.seed)
	ifChanged(fl, "max-requests", &o.maxRequests, &f.maxRequests)
	ifChanged(fl, "trace", &o.trace, &f.trace)
	ifChanged(fl, "format", &o.format, &f.format)
	ifChanged(fl, "clock", &o.clock, &f.clock)
	ifChanged(fl, "time-scale", &o.timeScale, &f.timeScale)
	return o
}

// ifChanged points *override at the flag's value when the command line
// set the flag (a nil override keeps the scenario's value).
func ifChanged[T any](fl *pflag.FlagSet, name string, override **T, value *T) {
	if fl.Changed(name) {
		*override = value
	}
}

func completeScenarios(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return append(scenarioStems(), "hcl"), cobra.ShellCompDirectiveFilterFileExt
}

func newRunCmd() *cobra.Command {
	f := &runFlags{}
	c := &cobra.Command{
		Use:   "run [SCENARIO]",
		Short: "Emulate a scenario and write its outputs",
		Long: `Emulate SCENARIO, an HCL file or the name of an embedded scenario
('pdemu scenarios' lists them; default ` + scenarios.Default + `), and write
per_request.csv, instances.csv, summary.json (and sessions.csv,
routing_log.jsonl where the policy has them) to --out.

--seed, --max-requests, --trace, --clock and --time-scale override the
scenario's workload block. --trace keeps the scenario's replay options
(max_concurrent, share_prefix, session_rate, trace_time, infer_sessions)
and detects the trace's format unless --format names it; override a replay
option with --set workload.max_concurrent=N. --set PATH=VALUE overrides any
attribute of the file by path, with the same diagnostics as the file.

--metrics-listen ADDR serves live Prometheus metrics (pdemu serve's
/metrics: vLLM names per worker plus pdemu_*) during a --clock wall run,
on loopback unless --allow-remote; --metrics-linger keeps them up after
the run for a last scrape. It is refused with the virtual clock.

Progress goes to stderr (a bar on a terminal, a line every 10 s
otherwise); -q silences it and the summary table.

` + exitCodesHelp,
		Example: `  pdemu run
  pdemu run vanilla-pd-1p3d --out out/vanilla --max-requests 200
  pdemu run --set router.tau_append=4096 --set decode.*.gpu=H100-SXM
  pdemu run --router vanilla --var sessions=52 --seed 7
  pdemu run claude-code --trace ../shared/traces/weka-claude-code --max-requests 300
  pdemu run --clock wall --time-scale 20 -q
  pdemu run --clock wall --time-scale 20 --metrics-listen 127.0.0.1:9100 --metrics-linger 30s`,
		Args:              atMostOne("run", "SCENARIO"),
		ValidArgsFunction: completeScenarios,
		RunE:              withOptionalArg(func(cmd *cobra.Command, file string) error { return cmdRun(cmd, f, file) }),
	}
	fl := c.Flags()
	f.sloFlags.register(c)
	fl.StringVar(&f.out, "out", "pdemu-out", "output directory")
	fl.Uint64Var(&f.seed, "seed", 0, "workload seed (overrides the scenario's)")
	fl.IntVar(&f.maxRequests, "max-requests", 0, "stop after this many requests (0 = the scenario's setting)")
	fl.StringVar(&f.trace, "trace", "", "replay this trace file or directory instead of the scenario's workload")
	fl.StringVar(&f.format, "format", "", "trace format for --trace ("+strings.Join(workload.Formats(), ", ")+"; default: detect)")
	fl.StringVar(&f.clock, "clock", "", "virtual | wall (overrides the scenario's)")
	fl.Float64Var(&f.timeScale, "time-scale", 0, "wall clock: emulated time runs this many times faster than real time")
	fl.StringVar(&f.logLevel, "log-level", "warn", "trace | debug | info | warn | error")
	fl.DurationVar(&f.wallTimeout, "wall-timeout", 30*time.Minute, "wall clock: give up (exit 1) if the run has not finished after this much real time")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress and no summary table")
	fl.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed trace records (counted in summary.json) instead of stopping")
	fl.BoolVar(&f.force, "force", false, "replace the outputs of an earlier run in --out (files pdemu did not write are kept)")
	fl.Float64Var(&f.maxFailed, "max-failed", output.DefaultMaxFailed, "exit 3 when more than this share of the requests failed (negative: no limit)")
	fl.BoolVar(&f.strictWall, "strict-wall", false, "wall clock: exit 4 when the run could not keep up with the wall clock (fidelity distorted)")
	fl.StringVar(&f.metricsListen, "metrics-listen", "", "wall clock: serve live Prometheus /metrics (pdemu serve's) on this address during the run, e.g. 127.0.0.1:9100")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow a non-loopback --metrics-listen address")
	fl.DurationVar(&f.metricsLinger, "metrics-linger", 0, "keep serving /metrics this long after the outputs are written (a last scrape; SIGINT ends it)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof FILE)")
	fl.StringVar(&f.memProfile, "memprofile", "", "write a heap profile (allocations and what is live at the end) to this file")
	registerOutputs(c, &f.outputs)
	f.scenarioFlags.register(c, "override an HCL attribute: --set PATH=VALUE, e.g. router.tau_append=4096 (repeatable)")
	return c
}

func newLogger(level string, w io.Writer) (hclog.Logger, error) {
	l := hclog.LevelFromString(level)
	if l == hclog.NoLevel {
		return nil, usageErr("--log-level must be trace, debug, info, warn or error, got %q", level)
	}
	return hclog.New(&hclog.LoggerOptions{Name: "pdemu", Level: l, Output: w}), nil
}

func cmdRun(cmd *cobra.Command, f *runFlags, file string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	tuneGCForBatch()
	for _, s := range f.set {
		if _, v, _ := strings.Cut(s, "="); strings.Contains(v, ",") {
			return usageErr("--set %s: run takes one value per path; sweep several values with 'pdemu compare'", s)
		}
	}
	if f.wallTimeout <= 0 {
		return usageErr("--wall-timeout must be > 0, got %v", f.wallTimeout)
	}
	outputs, err := output.ParseOutputs(f.outputs)
	if err != nil {
		return usageErr("%v", err)
	}
	if cmd.Flags().Changed("trace") {
		f.scenarioFlags.trace = f.trace
	}
	log, spec, err := f.loadForRun(file, f.logLevel, stderr, f.out, f.force)
	if err != nil {
		return err
	}
	if err := f.overrides(cmd).apply(spec); err != nil {
		return err
	}
	if spec.RouterSwap != nil {
		fmt.Fprintln(stderr, "pdemu: "+spec.RouterSwap.String())
	}
	if err := f.sloFlags.apply(spec); err != nil {
		return err
	}
	for _, w := range noEffectWarnings(spec) {
		fmt.Fprintln(stderr, "pdemu: warning: "+w)
	}
	// Before anything runs: the trace exists and parses, and its requests
	// fit the cluster's context and KV pools.
	fc, src, err := preflightKeep(spec, f.skipBad, cmd.Flags().Changed("trace"))
	if err != nil {
		return err
	}
	if src != nil { // the requests preflight read, replayed
		defer closeSource(src)
	}
	if w, err := fc.verdict(spec.Name, f.maxFailed); err != nil {
		return err
	} else if w != "" {
		fmt.Fprintln(stderr, w)
	}
	if src == nil {
		if src, err = openSource(spec, f.skipBad, cmd.Flags().Changed("trace")); err != nil {
			return err
		}
		defer closeSource(src)
	}
	warnFlags(stderr, idleRunFlags(cmd, spec))
	if err := checkMetricsFlags(f, spec); err != nil {
		return err
	}
	wl := spec.Workload
	fmt.Fprintf(stdout, "pdemu: scenario %s, policy %s, clock %s, seed %d\n", spec.Source, spec.Router.Policy, clockName(wl.Clock), wl.Seed)

	opts := actors.Options{Logger: log, Source: src, WallTimeout: f.wallTimeout}
	var live *serve.RunMetrics
	if f.metricsListen != "" {
		ms, err := startMetrics(f.metricsListen, spec, stderr)
		if err != nil {
			return err
		}
		defer ms.stop(cmd.Context(), f.metricsLinger)
		live = ms.m
		opts.Wrap = live.Wrap
	}
	// The records go to disk as the requests end (memory bounded by the
	// requests in flight, not the run's length).
	replaced := f.force && completeRunIn(f.out) // --force is about to remove a complete run
	outputs, note := largeRunOutputs(spec, outputs, routingLogAsked(cmd.Flags().Changed("outputs"), f.set))
	if note != "" { // even with -q: a file the user may expect is missing
		fmt.Fprintln(stderr, note)
	}
	st, err := output.NewStream(f.out, output.StreamOptions{WriteOptions: output.WriteOptions{Force: f.force, Outputs: outputs}})
	if err != nil {
		return err
	}
	defer st.Close()
	opts.Records = st
	prog := newProgress(stderr, f.quiet, wl.MaxRequests, "requests")
	opts.Progress = prog.requestCallback()
	stopProfiles, err := startProfiles(f.cpuProfile, f.memProfile)
	if err != nil {
		return err
	}
	enterCancellable()
	res, runErr := actors.Run(cmd.Context(), spec, opts)
	if live != nil && res != nil {
		live.Finish(res.End) // scrapes from now on see the run's end
	}
	prog.finish()
	if err := stopProfiles(); err != nil {
		return errors.Join(runErr, err)
	}
	var recErr *workload.RecordError
	if errors.As(runErr, &recErr) {
		runErr = badInput(runErr)
	}
	if res == nil {
		return runErr
	}
	if err := st.Write(res); err != nil {
		return errors.Join(runErr, err)
	}
	var partial *actors.PartialError
	if errors.As(runErr, &partial) {
		// A stopped run: its outputs are written (partial: true, every
		// unfinished request listed); the exit code says what stopped it.
		runErr = &exitError{output.StopCode(partial.StoppedBy), runErr}
	}
	if !f.quiet {
		printTable(stdout, res)
		output.PrintExplain(stdout, res.Summary)
		fmt.Fprintf(stdout, "outputs in %s (per_request.csv, instances.csv, summary.json, ...)\n", f.out)
	}
	// Warnings (failed share, imbalance, wall-clock distortion, partial
	// run) go to stderr even with -q: a run that is wrong must look wrong.
	output.PrintWarnings(stderr, res.Summary)
	if runErr == nil {
		runErr = output.Check(res, output.CheckOptions{MaxFailed: f.maxFailed, StrictWall: f.strictWall})
	}
	if runErr == nil {
		runErr = f.sloFlags.check(res.Summary)
	}
	if runErr != nil && replaced {
		fmt.Fprintf(stderr, "WARNING: --force replaced the complete run that was in %s with this unsuccessful one\n", f.out)
	}
	return runErr
}

func printTable(w io.Writer, res *actors.Result) {
	s := res.Summary
	fmt.Fprintf(w, "requests  total %d  completed %d  failed %d", s.Requests.Total, s.Requests.Completed, s.Requests.Failed)
	if s.Partial {
		fmt.Fprintf(w, "  unfinished %d (stopped by %s)", s.Requests.Unfinished, s.StoppedBy)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "modes    ")
	for _, m := range []string{"Direct", "Seed", "Reseed", "Fallback", "Vanilla", "Fused"} {
		fmt.Fprintf(w, " %s %d", m, s.Modes[m])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "ttft ms   p50 %.1f  p90 %.1f  p99 %.1f  mean %.1f\n", s.TTFT.P50, s.TTFT.P90, s.TTFT.P99, s.TTFT.Mean)
	fmt.Fprintf(w, "e2e ms    p50 %.1f  p90 %.1f  p99 %.1f  mean %.1f\n", s.E2E.P50, s.E2E.P90, s.E2E.P99, s.E2E.Mean)
	fmt.Fprintf(w, "emulated  %.1f s in %.3f s wall (%.0fx)\n", res.End.Seconds(), res.Wall.Seconds(), res.End.Seconds()/max(res.Wall.Seconds(), 1e-9))
	if l := s.Clock.Lateness; l != nil {
		fmt.Fprintf(w, "lateness  p50 %.3f ms  p99 %.3f ms  max %.3f ms (real time, %d timers)\n", l.P50, l.P99, l.Max, l.Samples)
	}
	if r := s.Router; r != nil {
		fmt.Fprintf(w, "router    migrations %d (max %d per session)  blacklists %d  fallbacks %d  rejections %d\n",
			r.Migrations, r.MaxSessionMigrations, r.Blacklists, r.Fallbacks, r.Rejections)
	}
	for _, b := range s.PerBucket {
		fmt.Fprintf(w, "bucket    %-8s requests %d (failed %d)  ttft p50 %.1f p99 %.1f ms  length match %.3f\n",
			b.Bucket, b.Requests.Total, b.Requests.Failed, b.TTFT.P50, b.TTFT.P99, b.LengthBucketMatch)
	}
	fmt.Fprintf(w, "runtime   dead letters %d  panics %d\n", s.Runtime.DeadLetters, s.Runtime.Panics)
	printSLO(w, s.SLO)
}

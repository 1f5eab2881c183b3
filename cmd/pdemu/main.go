// Command pdemu emulates disaggregated prefill/decode LLM serving clusters
// described in HCL, replaying agentic workloads in virtual or wall-clock
// time.
//
//	pdemu run [FILE] [--out DIR] [--seed N] [--max-requests N] [--trace PATH]
//	          [--clock virtual|wall] [--time-scale S] [--var k=v]...
//	pdemu validate FILE [--var k=v]...
//	pdemu models [--gpu NAME] [--mem-fraction F]
//	pdemu scenarios
//	pdemu trace stats FILE|DIR [--format F] [--skip-bad]
//	pdemu trace gen [--kind swebench|agentic] [--seed N] [--out FILE]
//
// Exit codes: 0 success, 1 the run failed (a lost request, a panic, an
// internal error), 2 bad input (HCL, trace, flags).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// exitError carries an exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{2, fmt.Errorf(format, a...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the flag package printed the usage
	}
	if err != nil {
		var ee *exitError
		code := 1
		if errors.As(err, &ee) {
			code = ee.code
		}
		var de *topology.DiagError
		if errors.As(err, &de) {
			_ = de.Write(os.Stderr, false)
			code = 2
		} else {
			fmt.Fprintln(os.Stderr, "pdemu:", err)
		}
		os.Exit(code)
	}
}

const usage = `usage:
  pdemu run [FILE] [flags]     emulate a scenario (default: the embedded %s)
  pdemu validate FILE [flags]  check a scenario file, print diagnostics
  pdemu models [flags]         list model presets with derived figures
  pdemu scenarios              list the embedded scenarios
  pdemu trace stats FILE|DIR   summarise a trace (requests, sessions, reuse)
  pdemu trace gen              write a synthetic trace as Mooncake-style JSONL
run 'pdemu COMMAND -h' for the flags of a command
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintf(stderr, usage, scenarios.Default)
		return &exitError{2, errors.New("no command given")}
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "models":
		return cmdModels(args[1:], stdout, stderr)
	case "trace":
		return cmdTrace(args[1:], stdout, stderr)
	case "scenarios":
		for _, n := range scenarios.Names() {
			fmt.Fprintln(stdout, n)
		}
		return nil
	case "-h", "--help", "help":
		fmt.Fprintf(stdout, usage, scenarios.Default)
		return nil
	default:
		fmt.Fprintf(stderr, usage, scenarios.Default)
		return usageErr("unknown command %q", args[0])
	}
}

// varFlag collects -var k=v.
type varFlag map[string]string

func (v varFlag) String() string { return "" }
func (v varFlag) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	v[k] = val
	return nil
}

// parseInterleaved parses flags that may come before or after positional
// arguments (pdemu run FILE --out DIR).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, &exitError{2, err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func parseOptions(vars varFlag) topology.Options {
	return topology.Options{
		Vars: vars,
		KnownGPU: func(n string) bool {
			_, err := gpu.LookupGPU(n)
			return err == nil
		},
		KnownModel: func(n string) bool {
			_, err := gpu.LookupModel(n)
			return err == nil
		},
		GPUNames:   gpu.GPUNames(),
		ModelNames: gpu.ModelNames(),
	}
}

// loadSpec reads FILE, or the embedded default scenario when file is "".
// An embedded scenario may also be named by its file name.
func loadSpec(file string, vars varFlag) (*topology.Spec, error) {
	opts := parseOptions(vars)
	if file == "" {
		file = scenarios.Default
	}
	if _, err := os.Stat(file); err != nil {
		if src, rerr := scenarios.Read(file); rerr == nil {
			name := "<embedded>/" + strings.TrimSuffix(file, ".hcl") + ".hcl"
			// Relative trace paths in an embedded scenario resolve as if the
			// file were read from ./scenarios (running from the repository
			// root, embedded and on-disk copies behave the same).
			wd, _ := os.Getwd()
			opts.BaseDir = filepath.Join(wd, "scenarios")
			return topology.Parse(name, src, opts)
		}
		return nil, usageErr("%s: no such file (and no embedded scenario of that name; try 'pdemu scenarios')", file)
	}
	return topology.Load(file, opts)
}

func cmdValidate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vars := varFlag{}
	fs.Var(vars, "var", "set a variable: -var NAME=VALUE (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("validate takes exactly one FILE")
	}
	spec, err := loadSpec(pos[0], vars)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok (%d prefill, %d decode, %d fused, %d links, router %q)\n",
		pos[0], len(spec.Prefill), len(spec.Decode), len(spec.Fused), len(spec.Links), spec.Router.Policy)
	return nil
}

func cmdModels(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g := fs.String("gpu", "H200-SXM", "GPU preset for the derived figures")
	frac := fs.Float64("mem-fraction", 0.88, "SGLang mem_fraction_static for the pool size")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if _, err := gpu.LookupGPU(*g); err != nil {
		return &exitError{2, err}
	}
	return gpu.WriteTable(stdout, *g, *frac)
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "pdemu-out", "output directory")
	seed := fs.Uint64("seed", 0, "workload seed (overrides the scenario's)")
	maxReq := fs.Int("max-requests", 0, "stop after this many requests (0 = the scenario's setting)")
	trace := fs.String("trace", "", "replay this trace instead of the scenario's workload")
	clock := fs.String("clock", "", "virtual | wall (overrides the scenario's)")
	scale := fs.Float64("time-scale", 0, "wall clock: emulated time runs this many times faster than real time")
	logLevel := fs.String("log-level", "warn", "trace | debug | info | warn | error")
	wallTimeout := fs.Duration("wall-timeout", 30*time.Minute, "wall clock: give up (exit 1) if the run has not finished after this much real time")
	quiet := fs.Bool("q", false, "do not print the summary table")
	skipBad := fs.Bool("skip-bad", false, "skip malformed trace records (counted in summary.json) instead of stopping")
	vars := varFlag{}
	fs.Var(vars, "var", "set a variable: -var NAME=VALUE (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageErr("run takes at most one FILE, got %d", len(pos))
	}
	file := ""
	if len(pos) == 1 {
		file = pos[0]
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	spec, err := loadSpec(file, vars)
	if err != nil {
		return err
	}
	wl := &spec.Workload
	if set["seed"] {
		wl.Seed = *seed
	}
	if set["max-requests"] {
		if *maxReq < 0 {
			return usageErr("--max-requests must be >= 0")
		}
		wl.MaxRequests = *maxReq
	}
	if set["trace"] {
		wl.Trace = *trace
	}
	if set["clock"] {
		if *clock != topology.ClockVirtual && *clock != topology.ClockWall {
			return usageErr("--clock must be virtual or wall, got %q", *clock)
		}
		wl.Clock = *clock
	}
	if set["time-scale"] {
		if *scale <= 0 {
			return usageErr("--time-scale must be > 0, got %g", *scale)
		}
		wl.TimeScale = *scale
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "pdemu", Level: hclog.LevelFromString(*logLevel), Output: stderr})

	src, err := actors.Source(spec, *skipBad)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) && strings.HasPrefix(spec.Source, "<embedded>/") && !set["trace"] {
			err = fmt.Errorf("%w (relative trace paths of embedded scenarios resolve from ./scenarios: run from the repository root with ../shared/traces beside it, or pass --trace)", err)
		}
		return &exitError{2, err}
	}
	if c, ok := src.(io.Closer); ok {
		defer c.Close()
	}
	fmt.Fprintf(stdout, "pdemu: scenario %s, policy %s, clock %s, seed %d\n", spec.Source, spec.Router.Policy, clockName(wl.Clock), wl.Seed)
	if *wallTimeout <= 0 {
		return usageErr("--wall-timeout must be > 0, got %v", *wallTimeout)
	}
	res, runErr := actors.Run(ctx, spec, actors.Options{Logger: log, Source: src, WallTimeout: *wallTimeout})
	var recErr *workload.RecordError
	if errors.As(runErr, &recErr) {
		runErr = &exitError{2, runErr}
	}
	if res == nil {
		return runErr
	}
	if err := writeOutputs(*out, res); err != nil {
		return errors.Join(runErr, err)
	}
	if !*quiet {
		printTable(stdout, res)
		fmt.Fprintf(stdout, "outputs in %s (per_request.csv, instances.csv, summary.json)\n", *out)
	}
	return runErr
}

func clockName(c string) string {
	if c == "" {
		return topology.ClockVirtual
	}
	return c
}

func writeOutputs(dir string, res *actors.Result) error {
	return output.Write(dir, res, output.WriteOptions{})
}

func printTable(w io.Writer, res *actors.Result) {
	s := res.Summary
	fmt.Fprintf(w, "requests  total %d  completed %d  failed %d\n", s.Requests.Total, s.Requests.Completed, s.Requests.Failed)
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
}

func cmdTrace(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("trace needs a subcommand: stats or gen")
	}
	switch args[0] {
	case "stats":
		fs := flag.NewFlagSet("trace stats", flag.ContinueOnError)
		fs.SetOutput(stderr)
		format := fs.String("format", "", "trace format ("+strings.Join(workload.Formats(), ", ")+"); default: detect")
		skipBad := fs.Bool("skip-bad", false, "skip malformed records instead of stopping")
		infer := fs.Bool("infer-sessions", false, "mooncake: group requests whose prompt extends an earlier one into sessions")
		pos, err := parseInterleaved(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usageErr("trace stats takes exactly one FILE or DIR")
		}
		src, err := workload.Open(pos[0], *format, workload.LoadOptions{SkipBad: *skipBad, InferSessions: *infer})
		if err != nil {
			return &exitError{2, err}
		}
		if c, ok := src.(io.Closer); ok {
			defer c.Close()
		}
		st, err := workload.ComputeStats(src)
		if err != nil {
			return &exitError{2, err}
		}
		st.Write(stdout)
		if sk, ok := src.(workload.Skipper); ok && sk.Skipped() > 0 {
			fmt.Fprintf(stdout, "skipped bad records: %d\n", sk.Skipped())
		}
		return nil
	case "gen":
		fs := flag.NewFlagSet("trace gen", flag.ContinueOnError)
		fs.SetOutput(stderr)
		kind := fs.String("kind", "swebench", "swebench (the KVC paper's SWE-Bench shape) | agentic (pdemu's default generator)")
		seed := fs.Uint64("seed", 1, "generator seed")
		out := fs.String("out", "-", "output file (- = stdout)")
		sessions := fs.Int("sessions", 0, "sessions (0 = the generator's default)")
		requests := fs.Int("requests", 0, "swebench: total requests (0 = 4449)")
		concurrency := fs.Int("concurrency", 0, "swebench: staggered starts with this many concurrent sessions (0 = spread over 5.44 h)")
		if _, err := parseInterleaved(fs, args[1:]); err != nil {
			return err
		}
		var src workload.Source
		var err error
		switch *kind {
		case "swebench":
			src, err = workload.NewSWEBench(workload.SWEBenchConfig{Sessions: *sessions, Requests: *requests, Concurrency: *concurrency}, *seed)
		case "agentic":
			src, err = workload.NewAgentic(workload.AgenticConfig{Sessions: *sessions}, *seed, 0)
		default:
			return usageErr("--kind must be swebench or agentic, got %q", *kind)
		}
		if err != nil {
			return &exitError{2, err}
		}
		w := stdout
		if *out != "-" {
			f, err := os.Create(*out)
			if err != nil {
				return err
			}
			defer f.Close()
			w = f
		}
		fmt.Fprintf(stderr, "pdemu: trace gen --kind %s --seed %d\n", *kind, *seed)
		return workload.WriteJSONL(w, src)
	default:
		return usageErr("unknown trace subcommand %q (want stats or gen)", args[0])
	}
}

package main

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/tracefetch"
	"github.com/pdemu/pdemu/workload"
)

// scenarioFlags are the flags that pick and alter a scenario, shared by
// run, compare and validate.
type scenarioFlags struct {
	vars   []string // --var NAME=VALUE
	set    []string // --set PATH=VALUE
	router string   // --router POLICY
	// trace is --trace when given (run sets it before loadForRun): the
	// parser then checks --set workload.* replay options against it.
	trace string
}

func (f *scenarioFlags) register(c *cobra.Command, setHelp string) {
	c.Flags().StringArrayVar(&f.vars, "var", nil, "set a scenario variable: --var NAME=VALUE (repeatable)")
	c.Flags().StringArrayVar(&f.set, "set", nil, setHelp)
	c.Flags().StringVar(&f.router, "router", "", "swap the routing policy (with its defaults; the scenario's own policy keeps its settings), e.g. vanilla, kvc, cache_aware_dp")
}

func (f *scenarioFlags) varMap() (map[string]string, error) {
	m := map[string]string{}
	for _, s := range f.vars {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usageErr("--var: want NAME=VALUE, got %q", s)
		}
		m[k] = v
	}
	return m, nil
}

// load reads the scenario file (an embedded scenario's name, or "-" for
// in, standard input) with the flags' --var, --set, --router and --trace.
func (f *scenarioFlags) load(file string, in io.Reader) (*topology.Spec, error) {
	vars, err := f.varMap()
	if err != nil {
		return nil, err
	}
	if file == "-" {
		return loadStdin(in, vars, *f)
	}
	return loadSpecTrace(file, vars, f.set, f.router, f.trace)
}

func parseOptions(vars map[string]string, set []string, router string) topology.Options {
	o := cluster.ParseOptions(vars)
	o.Set, o.Router = set, router
	// Relative trace paths of embedded scenarios resolve from ./scenarios,
	// also when a file of one's own extends them.
	if wd, err := os.Getwd(); err == nil {
		o.EmbeddedBaseDir = filepath.Join(wd, "scenarios")
	}
	return o
}

// scenarioStems lists the embedded scenarios without ".hcl".
func scenarioStems() []string {
	var out []string
	for _, n := range scenarios.Names() {
		out = append(out, strings.TrimSuffix(n, ".hcl"))
	}
	return out
}

// unknownScenario is the error for a name that is neither a file nor an
// embedded scenario, with the closest embedded name.
func unknownScenario(name string) error {
	hint := " (try 'pdemu scenarios')"
	if s := closest(strings.TrimSuffix(filepath.Base(name), ".hcl"), scenarioStems()); s != "" {
		hint = fmt.Sprintf(". Did you mean %q? ('pdemu scenarios' lists them)", s)
	}
	return usageErr("%s: no such file and no embedded scenario of that name%s", name, hint)
}

// loadSpec reads the scenario file, or the embedded scenario of that name
// (the default one when file is ""), with --var, --set and --router
// applied by the topology package.
func loadSpec(file string, vars map[string]string, set []string, router string) (*topology.Spec, error) {
	return loadSpecTrace(file, vars, set, router, "")
}

// loadSpecTrace is loadSpec with --trace given to the parser, so that
// --set workload.* replay options apply to the trace and the scenario's
// generator is dropped.
func loadSpecTrace(file string, vars map[string]string, set []string, router, trace string) (*topology.Spec, error) {
	opts := parseOptions(vars, set, router)
	opts.Trace = trace
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
			spec, err := topology.Parse(name, src, opts)
			return spec, badInput(err)
		}
		return nil, unknownScenario(file)
	}
	spec, err := topology.Load(file, opts)
	return spec, badInput(err)
}

// workloadOverrides are the run flags that override the scenario's
// workload block; a nil pointer keeps the scenario's value.
type workloadOverrides struct {
	seed        *uint64
	maxRequests *int
	trace       *string
	format      *string
	clock       *string
	timeScale   *float64
}

// apply changes spec's workload. --trace replaces the scenario's trace
// (or generator) but keeps its replay options (max_concurrent,
// share_prefix, session_rate, trace_time, infer_sessions, skip_bad); the
// trace format is detected unless --format names it, since the scenario's
// format described its own trace.
func (o workloadOverrides) apply(spec *topology.Spec) error {
	wl := &spec.Workload
	if o.seed != nil {
		wl.Seed = *o.seed
	}
	if o.maxRequests != nil {
		if *o.maxRequests < 0 {
			return usageErr("--max-requests must be >= 0")
		}
		wl.MaxRequests = *o.maxRequests
	}
	if o.trace != nil {
		t, err := resolveTraceName(*o.trace) // a `pdemu trace fetch` NAME
		if err != nil {
			return err
		}
		wl.Trace = t
		wl.Format = ""
	}
	if o.format != nil {
		if wl.Trace == "" {
			return usageErr("--format applies to a trace: give --trace too (the scenario uses the generator)")
		}
		known := false
		for _, f := range workload.Formats() {
			known = known || f == *o.format
		}
		if !known {
			return usageErr("--format %q: want one of %s", *o.format, strings.Join(workload.Formats(), ", "))
		}
		wl.Format = *o.format
	}
	if o.clock != nil {
		if *o.clock != topology.ClockVirtual && *o.clock != topology.ClockWall {
			return usageErr("--clock must be virtual or wall, got %q", *o.clock)
		}
		wl.Clock = *o.clock
	}
	if o.timeScale != nil {
		if !(*o.timeScale > 0 && *o.timeScale <= topology.MaxTimeScale) {
			return usageErr("--time-scale must be > 0 and at most %g, got %g", float64(topology.MaxTimeScale), *o.timeScale)
		}
		wl.TimeScale = *o.timeScale
	}
	return nil
}

// openSource opens spec's workload; a missing trace of an embedded
// scenario gets a hint on how its relative path resolves.
func openSource(spec *topology.Spec, skipBad, traceOverridden bool) (workload.Source, error) {
	src, err := sourceOf(spec, skipBad)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			fetch := tracefetch.Hint(spec.Workload.Trace) // a trace `pdemu trace fetch` gets
			switch {
			case strings.HasPrefix(spec.Source, "<embedded>/") && !traceOverridden && fetch != "":
				err = fmt.Errorf("%w (relative trace paths of embedded scenarios resolve from ./scenarios: run from the repository root with ../shared/traces beside it; or %s)", err, fetch)
			case strings.HasPrefix(spec.Source, "<embedded>/") && !traceOverridden:
				err = fmt.Errorf("%w (relative trace paths of embedded scenarios resolve from ./scenarios: run from the repository root with ../shared/traces beside it, or pass --trace)", err)
			case fetch != "":
				err = fmt.Errorf("%w (%s)", err, fetch)
			}
		}
		return nil, badInput(err)
	}
	return src, nil
}

func closeSource(src workload.Source) {
	if c, ok := src.(io.Closer); ok {
		_ = c.Close()
	}
}

func clockName(c string) string {
	if c == "" {
		return topology.ClockVirtual
	}
	return c
}

// loadForRun is what run and serve do before emulating: a logger at
// level, the scenario (with --var, --set, --router), and a check that out
// may be written (another run's outputs need --force).
func (f *scenarioFlags) loadForRun(file, level string, stderr io.Writer, out string, force bool) (hclog.Logger, *topology.Spec, error) {
	log, err := newLogger(level, stderr)
	if err != nil {
		return nil, nil, err
	}
	spec, err := f.load(file, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := output.CheckDir(out, force); err != nil {
		return nil, nil, err
	}
	return log, spec, nil
}

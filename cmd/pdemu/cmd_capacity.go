package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/compare"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/report"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// A load axis of pdemu capacity: the --set path it sweeps and whether
// its values are whole numbers.
type loadAxis struct {
	name, path string
	integer    bool
}

var loadAxes = []loadAxis{
	{"sessions", "workload.generator.sessions", true},   // the agentic generator's concurrent sessions
	{"max_concurrent", "workload.max_concurrent", true}, // a trace's sessions replayed at once
	{"session_rate", "workload.session_rate", false},    // a trace's Poisson session starts per second
	{"client_cap", "workload.client_cap", true},         // the replay client's outstanding requests
}

func axisByName(n string) (loadAxis, bool) {
	for _, a := range loadAxes {
		if a.name == n {
			return a, true
		}
	}
	return loadAxis{}, false
}

// axisOf picks the load axis of spec and its current value: the
// generator's sessions, else the trace replay's max_concurrent or
// session_rate.
func axisOf(spec *topology.Spec) (loadAxis, float64, bool) {
	wl := spec.Workload
	switch {
	case wl.Trace == "":
		a, _ := axisByName("sessions")
		return a, float64(wl.Generator.Sessions), true
	case wl.Replay.MaxConcurrent > 0:
		a, _ := axisByName("max_concurrent")
		return a, float64(wl.Replay.MaxConcurrent), true
	case wl.Replay.SessionRate > 0:
		a, _ := axisByName("session_rate")
		return a, wl.Replay.SessionRate, true
	}
	return loadAxis{}, 0, false
}

type capacityFlags struct {
	compareFlags
	load   string
	lo, hi float64
	steps  int
	rounds int
}

func newCapacityCmd() *cobra.Command {
	f := &capacityFlags{}
	c := &cobra.Command{
		Use:   "capacity SCENARIO... --out DIR",
		Short: "Find the largest load at which each scenario and policy meets its SLO",
		Long: `Search, for each SCENARIO and --router policy, the largest load at which
the run meets its SLO (the slo block or --slo: at least the target share
of requests within the TTFT/TPOT/E2E thresholds): DistServe's goodput
question and Vidur's SLO-constrained search, for P/D routing policies.

The load is --load: sessions (the agentic generator's concurrent
sessions), max_concurrent (a trace's sessions replayed at once),
session_rate (a trace's Poisson session starts per second) or client_cap;
by default the scenario's own (sessions for a generator, else the
replay's max_concurrent or session_rate). Round 1 runs --steps loads
spaced geometrically over [--min, --max] (default: a quarter to four times
the scenario's value); each further round (--rounds) runs --steps loads
between the largest load that met the SLO and the smallest that did not.
The runs of a round execute in parallel (--jobs), with compare's
machinery: every run is checked before the first starts, and each
round's runs, compare.csv and report.html are in DIR/round-N.

Prints, per scenario and policy, the capacity (largest load meeting the
SLO), its attainment and goodput, and the first load that missed; writes
DIR/capacity.json (every point) and DIR/capacity.svg (attainment vs load,
one line per scenario and policy, the target dashed).

` + exitCodesHelp,
		Example: `  pdemu capacity 1p3d-mlx5 --out cap
  pdemu capacity 1p3d-mlx5 --router kvc,vanilla --min 8 --max 128 --out cap
  pdemu capacity claude-code --load max_concurrent --min 2 --max 32 --slo ttft=30s --out cap-cc`,
		RunE: func(cmd *cobra.Command, args []string) error { return cmdCapacity(cmd, f, args) },
	}
	fl := f.planCommand(c, "capacity")
	fl.StringVar(&f.load, "load", "", "the load to search: sessions, max_concurrent, session_rate or client_cap (default: the scenario's)")
	fl.Float64Var(&f.lo, "min", 0, "smallest load of round 1 (default: a quarter of the scenario's)")
	fl.Float64Var(&f.hi, "max", 0, "largest load of round 1 (default: four times the scenario's)")
	fl.IntVar(&f.steps, "steps", 6, "loads per round")
	fl.IntVar(&f.rounds, "rounds", 2, "rounds of the search (round 2 on refine between the last load that met the SLO and the first that did not)")
	fl.StringVar(&f.trace, "trace", "", "replay this trace instead of each scenario's workload")
	f.registerPlanFlags(fl)
	fl.BoolVar(&f.force, "force", false, "replace the outputs of an earlier search in --out")
	fl.Float64Var(&f.maxFailed, "max-failed", -1, "refuse a run (before it starts) when more than this share of its requests cannot fit the cluster (negative: no limit)")
	f.scenarioFlags.register(c, "override an HCL attribute in every run: --set PATH=VALUE (repeatable)")
	c.Flags().Lookup("router").Usage = "the policies to search, a comma list P1,P2 (default: each scenario's own)"
	return c
}

// capPoint is one run of the search.
type capPoint struct {
	Scenario   string  `json:"scenario"`
	Policy     string  `json:"policy"`
	Load       float64 `json:"load"`
	Run        string  `json:"run"`
	Attainment float64 `json:"attainment"`
	GoodputRPS float64 `json:"goodput_rps"`
	Met        bool    `json:"met"`
	Overloaded bool    `json:"overloaded"`
	Failed     int     `json:"failed"`
}

// capGroup is one scenario × policy of the search.
type capGroup struct {
	scenario, router string
	points           []capPoint
}

// bounds are the capacity, the largest load that met the SLO with every
// smaller load tried meeting it too, and the first load that missed (NaN
// when none). A load above the first miss that meets it again (the
// attainment is not always monotone in the load) does not count.
func (g *capGroup) bounds() (pass, fail float64) {
	pass, fail = math.NaN(), math.NaN()
	g.sort()
	for _, p := range g.points {
		if !p.Met {
			return pass, p.Load
		}
		pass = p.Load
	}
	return pass, fail
}

func (g *capGroup) sort() {
	sort.Slice(g.points, func(i, j int) bool { return g.points[i].Load < g.points[j].Load })
}

func (g *capGroup) at(load float64) (capPoint, bool) {
	for _, p := range g.points {
		if p.Load == load {
			return p, true
		}
	}
	return capPoint{}, false
}

// grid is n loads over [lo, hi], geometric in round 1 and linear after,
// whole numbers for an integer axis, without duplicates or loads already
// run.
func grid(a loadAxis, lo, hi float64, n int, geometric bool, done func(float64) bool) []float64 {
	var out []float64
	seen := map[float64]bool{}
	for i := 0; i < n; i++ {
		t := 0.0
		if n > 1 {
			t = float64(i) / float64(n-1)
		}
		v := lo + t*(hi-lo)
		if geometric && lo > 0 {
			v = lo * math.Pow(hi/lo, t)
		}
		if a.integer {
			v = math.Max(1, math.Round(v))
		} else {
			v = math.Round(v*1e4) / 1e4
		}
		if v <= 0 || seen[v] || done(v) {
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	return out
}

func formatLoad(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func cmdCapacity(cmd *cobra.Command, f *capacityFlags, scens []string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.steps < 2 || f.rounds < 1 || f.jobs < 1 {
		return usageErr("--steps must be >= 2, --rounds and --jobs >= 1")
	}
	if f.lo < 0 || f.hi < 0 || (f.hi > 0 && f.lo > f.hi) {
		return usageErr("--min and --max must be >= 0 with --min <= --max")
	}
	log, vars, routers, err := f.planSetup(stderr)
	if err != nil {
		return err
	}
	if len(routers) == 0 {
		routers = []string{""}
	}
	base := f.out // cf.out becomes each round's directory
	if err := output.CheckDir(base, f.force); err != nil {
		return err
	}
	traceSet := cmd.Flags().Changed("trace")
	trace := ""
	if traceSet {
		trace = f.trace
	}
	// The axis and the default range, from the first scenario.
	spec0, err := loadSpecTrace(scens[0], vars, f.set, routers[0], trace)
	if err != nil {
		return err
	}
	if traceSet {
		spec0.Workload.Trace = f.trace
	}
	// --slo and --min-attainment are checked once, before round 1 starts
	// (each run applies them again).
	sloCheck := *spec0 // apply sets only the copy's SLO
	if err := f.sloFlags.apply(&sloCheck); err != nil {
		return err
	}
	axis, cur, ok := axisOf(spec0)
	if f.load != "" {
		if axis, ok = axisByName(f.load); !ok {
			var names []string
			for _, a := range loadAxes {
				names = append(names, a.name)
			}
			return usageErr("--load %q: want one of %s", f.load, strings.Join(names, ", "))
		}
		switch {
		case spec0.Workload.Trace == "" && (axis.name == "max_concurrent" || axis.name == "session_rate"):
			return usageErr("--load %s sweeps a trace's replay, but %s runs the agentic generator: use --load sessions, or give --trace", axis.name, scens[0])
		case spec0.Workload.Trace != "" && axis.name == "sessions":
			return usageErr("--load sessions sweeps the agentic generator, but %s replays a trace: use --load max_concurrent or session_rate", scens[0])
		}
	} else if !ok {
		return usageErr("%s: no load to search by default (a trace replayed at its recorded times): name one with --load session_rate or --load max_concurrent", scens[0])
	}
	lo, hi := f.lo, f.hi
	if cur <= 0 {
		cur = 1
	}
	if lo == 0 {
		lo = math.Max(cur/4, 1e-3)
		if axis.integer {
			lo = math.Max(1, math.Floor(cur/4))
		}
	}
	if hi == 0 {
		hi = math.Max(cur*4, lo)
	}
	groups := map[string]*capGroup{}
	var order []string
	for _, sc := range scens {
		for _, rt := range routers {
			k := sc + "\x00" + rt
			groups[k] = &capGroup{scenario: sc, router: rt}
			order = append(order, k)
		}
	}
	var format *string
	if cmd.Flags().Changed("format") {
		format = &f.format
	}
	cf := &f.compareFlags
	for round := 1; round <= f.rounds; round++ {
		var runs []report.Params
		var loadOf []float64
		keyOf := map[string]string{}
		for _, k := range order {
			g := groups[k]
			var vals []float64
			if round == 1 {
				vals = grid(axis, lo, hi, f.steps, true, func(float64) bool { return false })
			} else {
				pass, fail := g.bounds()
				if math.IsNaN(pass) || math.IsNaN(fail) {
					continue // nothing to refine: every load met it, or none did
				}
				done := func(v float64) bool { _, ok := g.at(v); return ok }
				vals = grid(axis, pass, fail, f.steps, false, done)
			}
			if len(vals) == 0 {
				continue
			}
			strs := make([]string, len(vals))
			for i, v := range vals {
				strs[i] = formatLoad(v)
			}
			plan := compare.Plan{Scenarios: []string{g.scenario}, Set: append(append([]string(nil), f.set...), axis.path+"="+strings.Join(strs, ",")),
				Vars: vars, MaxRequests: f.maxRequests}
			if g.router != "" {
				plan.Routers = []string{g.router}
			}
			if traceSet {
				plan.Traces = []string{f.trace}
			}
			rs, err := plan.Runs()
			if err != nil {
				return badInput(err)
			}
			for i, r := range rs {
				runs = append(runs, r)
				loadOf = append(loadOf, vals[i%len(vals)])
				keyOf[r.Name] = k
			}
		}
		if len(runs) == 0 {
			break
		}
		dir := filepath.Join(base, fmt.Sprintf("round-%d", round))
		cf.out = dir
		load := func(p report.Params) (*topology.Spec, error) {
			spec, err := loadPlanRun(p, traceSet, format)
			if err != nil {
				return nil, err
			}
			if err := f.sloFlags.apply(spec); err != nil {
				return nil, err
			}
			return spec, checkBeforeRun(spec, p, cf, traceSet, true, io.Discard)
		}
		if !f.quiet {
			fmt.Fprintf(stderr, "pdemu: capacity round %d: %d runs, %d at a time, into %s\n", round, len(runs), f.jobs, dir)
		}
		opts := compare.Options{Out: dir, Jobs: f.jobs, Load: load, Logger: log, Force: f.force,
			Source: func(s *topology.Spec) (workload.Source, error) { return openSource(s, f.skipBad, traceSet) }}
		res, err := compare.Execute(cmd.Context(), runs, opts)
		var le *compare.LoadError
		if errors.As(err, &le) {
			return badInput(err)
		}
		if res == nil {
			return err
		}
		for i, r := range runs {
			if e := res.Failed[r.Name]; e != nil {
				return fmt.Errorf("capacity: run %s failed: %w", r.Name, e)
			}
			s, err := readSummary(compare.RunDir(dir, r.Name))
			if err != nil {
				return err
			}
			g := groups[keyOf[r.Name]]
			pt := capPoint{Scenario: scenarioLabel(g.scenario), Policy: s.Policy, Load: loadOf[i], Run: filepath.Join(fmt.Sprintf("round-%d", round), "runs", r.Name),
				Failed: s.Requests.Failed}
			if s.SLO != nil {
				pt.Attainment, pt.GoodputRPS, pt.Met, pt.Overloaded = s.SLO.Attainment, s.SLO.GoodputRPS, s.SLO.OK, s.SLO.Overloaded
			}
			g.points = append(g.points, pt)
		}
	}
	var all []capPoint
	for _, k := range order {
		groups[k].sort()
		all = append(all, groups[k].points...)
	}
	if err := writeCapacity(base, axis, spec0.SLO, f.slo, all, order, groups); err != nil {
		return err
	}
	if !f.quiet {
		printCapacity(stdout, axis, order, groups)
		fmt.Fprintf(stdout, "points in %s, plot in %s\n", filepath.Join(base, "capacity.json"), filepath.Join(base, "capacity.svg"))
	}
	return nil
}

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/experiment"
)

type experimentFlags struct {
	out      string
	seeds    int
	jobs     int
	short    bool
	sens     bool
	force    bool
	json     bool
	quiet    bool
	logLevel string
}

// experimentHelp is each experiment's long description.
var experimentHelp = map[string]string{
	"kvc-paper": `Run the KVC-Router paper's evaluation (shared/seeds/000_*, §7 and §9):
KVC v2 and v1, vanilla P/D, sticky-only, KV-score and SGLang-style
cache-aware DP (plus round-robin and shortest-queue DP) on the paper's
1P3D H100 cluster over TCP loopback and RDMA, replaying the SWE-Bench
workload model (52 sessions, 4,449 requests, 5.44 h, client cap 32), with
the sensitivity runs of the open questions Q1-Q5 (v1 stress content, a
burst, D→P sync, P's backup). Runs repeated across seeds use seeds 1..N.

Prints the published-vs-emulated table (each figure with the emulated
mean over seeds, its spread, the tolerance and a verdict class:
reproduced, depends-on-fitted, consistency-check or miss; the counts per
class in the heading), the attribution of each figure computed from the
runs (prefilled tokens by mode, cause and side, the TTFT tail by mode and
part, the v1 - v2 gap split into tau_append and reset-on-success), and the
Q1-Q5 sections, and writes DIR/report.txt (the same text), DIR/report.md,
DIR/report.json, DIR/report.html and every run's usual outputs
under DIR/runs/<run>/ (see 'pdemu run -h' and docs/OUTPUTS.md). The
modelling choices behind it are docs/MODEL.md §7.

Every run is deterministic (virtual clock): the same flags give the same
figures and run outputs whatever --jobs (only the report's wall-time note
differs). The full set with 3 seeds is 53 runs, 12 of them the fitted
parameters at their unfitted values, which decide the depends-on-fitted
class (a minute or two of CPU per core); --short runs 37 runs on one seed
and a fifth of the workload (seconds): a smoke test, not the figures.
--sensitivity adds 8 runs per fitted or assumed parameter with a range
(its low and high value on KVC v2 TCP and RDMA, KVC v1 and DP) and 4 per
fitted parameter with an unfitted value (20 parameters, 172 runs, the 12
unfitted ones included), a
sensitivity table, the parameters that decide each verdict, and a tornado
plot per figure in report.html.`,
}

func newExperimentCmd() *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "experiment",
		Short: "Run a built-in experiment (a set of runs and its report)",
		Long: `Run a built-in experiment: a fixed set of emulations with a report that
sets their figures against published ones. Experiments: kvc-paper.`,
		Example: "  pdemu experiment kvc-paper --out kvc\n  pdemu experiment kvc-paper --short --out /tmp/kvc-short",
	})
	for _, name := range experiment.Names() {
		c.AddCommand(newExperimentRunCmd(name))
	}
	return c
}

func newExperimentRunCmd(name string) *cobra.Command {
	f := &experimentFlags{}
	c := &cobra.Command{
		Use:   name,
		Short: "The KVC-Router paper's evaluation: published vs emulated figures",
		Long:  experimentHelp[name] + "\n\n" + exitCodesHelp,
		Example: `  pdemu experiment ` + name + ` --out kvc
  pdemu experiment ` + name + ` --seeds 5 --jobs 2 --out kvc5
  pdemu experiment ` + name + ` --short --out /tmp/kvc-short --force
  pdemu experiment ` + name + ` --seeds 1 --sensitivity --out kvc-sens
  pdemu experiment ` + name + ` --out kvc --json > kvc.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmdExperiment(cmd, name, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.out, "out", "pdemu-"+name, "output directory (report.txt, report.md, report.json, runs/)")
	fl.IntVar(&f.seeds, "seeds", 3, "repeat the seeded runs over seeds 1..N")
	fl.IntVar(&f.jobs, "jobs", runtime.NumCPU(), "runs at once")
	fl.BoolVar(&f.short, "short", false, "one seed on a cut workload, no sensitivity runs (a smoke test, not the figures)")
	fl.BoolVar(&f.sens, "sensitivity", false, "also run every fitted and assumed parameter (docs/MODEL.md §7.2) at its low and high value: a sensitivity table and tornado plots in report.html")
	fl.BoolVar(&f.force, "force", false, "replace an earlier experiment's outputs in --out")
	fl.BoolVar(&f.json, "json", false, "print report.json on stdout instead of the text report")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress on stderr")
	fl.StringVar(&f.logLevel, "log-level", "warn", "trace | debug | info | warn | error")
	return c
}

func cmdExperiment(cmd *cobra.Command, name string, f *experimentFlags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.seeds < 1 {
		return usageErr("--seeds must be >= 1, got %d", f.seeds)
	}
	if f.jobs < 1 {
		return usageErr("--jobs must be >= 1, got %d", f.jobs)
	}
	if f.out == "" {
		return usageErr("--out must name a directory")
	}
	log, err := newLogger(f.logLevel, stderr)
	if err != nil {
		return err
	}
	// Refuse before hours of work, not when the first run writes.
	if !f.force {
		for _, p := range []string{"report.json", "runs"} {
			if _, err := os.Stat(filepath.Join(f.out, p)); err == nil {
				return usageErr("%s holds an earlier experiment's outputs (%s); use --force to replace them or another --out", f.out, p)
			} else if !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	opts := experiment.Options{
		Parallel: f.jobs, OutDir: f.out, Force: f.force, Short: f.short, Sensitivity: f.sens, Logger: log,
	}
	for s := 1; s <= f.seeds; s++ {
		opts.Seeds = append(opts.Seeds, uint64(s))
	}
	if !f.quiet {
		opts.Progress = func(done, total int, run string) {
			fmt.Fprintf(stderr, "pdemu: experiment %s: %d/%d runs done (%s)\n", name, done, total, run)
		}
	}
	enterCancellable()
	rep, err := experiment.Run(cmd.Context(), name, opts)
	if err != nil {
		return err
	}
	if err := rep.WriteDir(f.out); err != nil {
		return err
	}
	if f.json {
		return rep.WriteJSON(stdout)
	}
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if !f.quiet {
		fmt.Fprintf(stderr, "pdemu: report in %s (report.txt, report.md, report.json), runs in %s\n",
			f.out, filepath.Join(f.out, "runs"))
	}
	return nil
}

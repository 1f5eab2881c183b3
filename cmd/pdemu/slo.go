package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/topology"
)

// sloFlags are the SLO flags of run and compare.
type sloFlags struct {
	slo            string  // --slo ttft=5s,tpot=50ms,...
	minAttainment  float64 // --min-attainment: exit 3 below it
	failOverloaded bool    // --fail-overloaded: exit 3 on the overload verdict
}

func (f *sloFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.slo, "slo", "", "override the scenario's SLO: ttft=D,tpot=D,e2e=D,attainment=F (any subset; 0 turns a threshold off; default ttft=10s,tpot=100ms,attainment=0.9)")
	fl.Float64Var(&f.minAttainment, "min-attainment", 0, "exit 3 when a run's SLO attainment (share of requests meeting the SLO) is below this")
	fl.BoolVar(&f.failOverloaded, "fail-overloaded", false, "exit 3 when a run is overloaded (p99 TTFT far beyond the SLO, or queues growing over the run)")
}

// apply sets --slo on spec.
func (f *sloFlags) apply(spec *topology.Spec) error {
	if f.minAttainment < 0 || f.minAttainment > 1 {
		return usageErr("--min-attainment must be in [0, 1], got %g", f.minAttainment)
	}
	if f.slo == "" {
		return nil
	}
	s, err := topology.ParseSLO(spec.SLO, f.slo)
	if err != nil {
		return usageErr("%v", err)
	}
	spec.SLO = s
	return nil
}

// check applies --min-attainment and --fail-overloaded to a run's
// summary (exit 3).
func (f *sloFlags) check(s metrics.Summary) error {
	o := s.SLO
	if o == nil {
		return nil
	}
	if f.minAttainment > 0 && o.Attainment < f.minAttainment {
		return &exitError{exitTooManyFail, fmt.Errorf("SLO attainment %.1f%% is below --min-attainment %.1f%% (%s)", 100*o.Attainment, 100*f.minAttainment, o.Thresholds())}
	}
	if f.failOverloaded && o.Overloaded {
		return &exitError{exitTooManyFail, fmt.Errorf("--fail-overloaded: %s", o.Verdict)}
	}
	return nil
}

// printSLO is the summary table's SLO lines.
func printSLO(w io.Writer, o *metrics.SLOSummary) {
	if o == nil {
		return
	}
	verdict := "met"
	if !o.OK {
		verdict = "MISSED"
	}
	fmt.Fprintf(w, "slo       %s: %.1f%% of requests met it (target %.0f%%: %s)  goodput %.4g req/s  sessions %d of %d met\n",
		o.Thresholds(), 100*o.Attainment, 100*o.Target, verdict, o.GoodputRPS, o.SessionsMet, o.Sessions)
	if o.Overloaded {
		fmt.Fprintf(w, "OVERLOAD  %s\n", strings.TrimPrefix(o.Verdict, "overloaded: "))
	}
}

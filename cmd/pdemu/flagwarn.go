package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/topology"
)

// idleRunFlags lists the flags given to run that do nothing in this run
// (spec is the run's scenario with the flags applied): --time-scale,
// --wall-timeout and --strict-wall without the wall clock, --skip-bad on a
// generated workload, --seed on a trace replay whose sessions start at the
// trace's own times. Each is a sentence for a warning.
func idleRunFlags(c *cobra.Command, spec *topology.Spec) []string {
	var out []string
	wl := spec.Workload
	if c.Flags().Changed("time-scale") && wl.Clock != topology.ClockWall {
		out = append(out, fmt.Sprintf("--time-scale has no effect with the %s clock (it scales the wall clock: add --clock wall)", clockName(wl.Clock)))
	}
	for _, name := range []string{"wall-timeout", "strict-wall"} {
		if c.Flags().Changed(name) && wl.Clock != topology.ClockWall {
			out = append(out, fmt.Sprintf("--%s has no effect with the %s clock (it applies to --clock wall)", name, clockName(wl.Clock)))
		}
	}
	if c.Flags().Changed("skip-bad") && wl.Trace == "" {
		out = append(out, "--skip-bad has no effect on a generated workload (it skips malformed trace records)")
	}
	if c.Flags().Changed("seed") && wl.Trace != "" && wl.Replay.SessionRate == 0 {
		out = append(out, "--seed has no effect on this trace replay: the trace fixes every request and arrival (the seed only salts block hashes, and draws session starts when workload.session_rate is set)")
	}
	return out
}

// idleGenFlags lists trace gen's flags that do nothing for --kind kind.
func idleGenFlags(c *cobra.Command, kind string) []string {
	var out []string
	if kind != "agentic" {
		return nil
	}
	for _, name := range []string{"requests"} {
		if c.Flags().Changed(name) {
			out = append(out, fmt.Sprintf("--%s has no effect with --kind agentic (it shapes --kind swebench)", name))
		}
	}
	return out
}

// warnFlags prints each idle flag's warning on w.
func warnFlags(w io.Writer, msgs []string) {
	for _, m := range msgs {
		fmt.Fprintf(w, "pdemu: warning: %s\n", m)
	}
}

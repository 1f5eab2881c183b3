package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// diagJSON is one diagnostic of validate --json.
type diagJSON struct {
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
}

type validateJSON struct {
	File        string     `json:"file"`
	OK          bool       `json:"ok"`
	Prefill     int        `json:"prefill"`
	Decode      int        `json:"decode"`
	Fused       int        `json:"fused"`
	Links       int        `json:"links"`
	Router      string     `json:"router,omitempty"`
	Workload    *fitJSON   `json:"workload,omitempty"`
	Warnings    []string   `json:"warnings,omitempty"`
	Error       string     `json:"error,omitempty"`
	Diagnostics []diagJSON `json:"diagnostics,omitempty"`
}

func newValidateCmd() *cobra.Command {
	var sf scenarioFlags
	var vf validateFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "validate SCENARIO",
		Short: "Check a scenario file and print its diagnostics",
		Long: `Parse and validate SCENARIO (an HCL file, an embedded scenario's
name, or - for standard input) with --var, --set, --router and --trace
applied, and print every problem with file:line:col and a source snippet
(exit 2), or a one-line summary.

The workload is then read as a run would read it: the trace (the
scenario's, or --trace) must exist and parse, and its requests are
checked against the cluster's context (max_model_len) and KV pools; more
than --max-failed that cannot be served fail validation with the --set
that fixes them. --json prints {file, ok, prefill, decode, fused, links,
router, workload: {requests, longest_tokens, context_tokens, pool_tokens,
over_context, over_pool}, warnings} or {file, ok: false, error,
diagnostics: [{severity, summary, detail, file, line, column}]}.`,
		Example: `  pdemu validate my-cluster.hcl
  pdemu validate 1p3d-tcp --set router.tau_append=4096 --json
  pdemu validate claude-code --var max_concurrent=8
  pdemu validate claude-code-dp4 --trace ../shared/traces/weka-claude-code
  pdemu scenarios show dp4 | pdemu validate -`,
		Args:              exactlyOne("validate", "SCENARIO"),
		ValidArgsFunction: completeScenarios,
		RunE: func(cmd *cobra.Command, args []string) error {
			traceSet := cmd.Flags().Changed("trace")
			if traceSet {
				sf.trace = vf.trace
			}
			spec, err := sf.load(args[0], cmd.InOrStdin())
			var fc *fitCheck
			var warning string
			if err == nil {
				fc, warning, err = vf.checkWorkload(cmd, spec, traceSet)
			}
			out := cmd.OutOrStdout()
			if !asJSON {
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "%s: ok (%d prefill, %d decode, %d fused, %d links, router %q); %s\n",
					args[0], len(spec.Prefill), len(spec.Decode), len(spec.Fused), len(spec.Links), spec.Router.Policy, fc.summary())
				if warning != "" {
					fmt.Fprintln(cmd.ErrOrStderr(), warning)
				}
				for _, w := range noEffectWarnings(spec) {
					fmt.Fprintln(cmd.ErrOrStderr(), "pdemu: warning: "+w)
				}
				return nil
			}
			v := validateJSON{File: args[0], OK: err == nil}
			if err != nil {
				v.Error = err.Error()
				var de *topology.DiagError
				if errors.As(err, &de) {
					v.Diagnostics = diagsJSON(de.Diags)
				}
				if werr := writeJSON(out, v); werr != nil {
					return werr
				}
				return badInput(err)
			}
			v.Prefill, v.Decode, v.Fused, v.Links, v.Router = len(spec.Prefill), len(spec.Decode), len(spec.Fused), len(spec.Links), spec.Router.Policy
			v.Workload = fc.json()
			if warning != "" {
				v.Warnings = append(v.Warnings, warning)
			}
			v.Warnings = append(v.Warnings, noEffectWarnings(spec)...)
			return writeJSON(out, v)
		},
	}
	sf.register(c, "override an HCL attribute: --set PATH=VALUE (repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	fl := c.Flags()
	fl.StringVar(&vf.trace, "trace", "", "check this trace (file or directory) instead of the scenario's workload")
	fl.StringVar(&vf.format, "format", "", "trace format for --trace ("+strings.Join(workload.Formats(), ", ")+"; default: detect)")
	fl.BoolVar(&vf.skipBad, "skip-bad", false, "skip malformed trace records instead of failing")
	fl.Float64Var(&vf.maxFailed, "max-failed", output.DefaultMaxFailed, "fail when more than this share of the requests cannot be served (negative: no limit)")
	return c
}

// validateFlags are validate's workload flags.
type validateFlags struct {
	trace, format string
	skipBad       bool
	maxFailed     float64
}

// checkWorkload applies --trace/--format to spec and reads its workload
// as a run would (preflight).
func (vf *validateFlags) checkWorkload(cmd *cobra.Command, spec *topology.Spec, traceSet bool) (*fitCheck, string, error) {
	var o workloadOverrides
	if traceSet {
		o.trace = &vf.trace
	}
	if cmd.Flags().Changed("format") {
		o.format = &vf.format
	}
	if err := o.apply(spec); err != nil {
		return nil, "", err
	}
	fc, err := preflight(spec, vf.skipBad, traceSet)
	if err != nil {
		return nil, "", err
	}
	w, err := fc.verdict(spec.Name, vf.maxFailed)
	return fc, w, err
}

// fitJSON is validate --json's workload.
type fitJSON struct {
	Requests    int `json:"requests"`
	Longest     int `json:"longest_tokens"`
	Context     int `json:"context_tokens"`
	Pool        int `json:"pool_tokens"`
	OverContext int `json:"over_context"`
	OverPool    int `json:"over_pool"`
}

func (f *fitCheck) json() *fitJSON {
	return &fitJSON{f.Requests, f.Longest, f.Limits.Context, f.Limits.Pool, f.OverContext, f.OverPool}
}

// summary is validate's one-line account of the workload.
func (f *fitCheck) summary() string {
	s := fmt.Sprintf("workload %d requests, longest %d tokens; context %d, largest ρ·K_d %d", f.Requests, f.Longest, f.Limits.Context, f.Limits.Pool)
	if n := f.Failing(); n > 0 {
		return s + fmt.Sprintf("; %d cannot be served (%d exceed the context, %d every pool)", n, f.OverContext, f.OverPool)
	}
	return s + "; every request fits"
}

// loadStdin parses a scenario from r (validate -). Relative paths in it
// (extends, trace) resolve from the working directory.
func loadStdin(r io.Reader, vars map[string]string, sf scenarioFlags) (*topology.Spec, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	opts := parseOptions(vars, sf.set, sf.router)
	opts.Trace = sf.trace
	wd, _ := os.Getwd()
	opts.BaseDir = wd
	spec, err := topology.Parse(filepath.Join(wd, "<stdin>.hcl"), src, opts)
	return spec, badInput(err)
}

func diagsJSON(ds hcl.Diagnostics) []diagJSON {
	var out []diagJSON
	for _, d := range ds {
		if d == nil {
			continue
		}
		j := diagJSON{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			j.Severity = "warning"
		}
		if d.Subject != nil {
			j.File, j.Line, j.Column = d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column
		}
		out = append(out, j)
	}
	return out
}

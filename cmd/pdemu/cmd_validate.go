package main

import (
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/topology"
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
	Error       string     `json:"error,omitempty"`
	Diagnostics []diagJSON `json:"diagnostics,omitempty"`
}

func newValidateCmd() *cobra.Command {
	var sf scenarioFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "validate SCENARIO",
		Short: "Check a scenario file and print its diagnostics",
		Long: `Parse and validate SCENARIO (an HCL file or an embedded scenario's
name) with --var, --set and --router applied, and print every problem with
file:line:col and a source snippet (exit 2), or a one-line summary.
--json prints {file, ok, prefill, decode, fused, links, router} or
{file, ok: false, error, diagnostics: [{severity, summary, detail, file,
line, column}]}.`,
		Example: `  pdemu validate my-cluster.hcl
  pdemu validate 1p3d-tcp --set router.tau_append=4096 --json
  pdemu validate claude-code --var max_concurrent=8`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("validate takes exactly one SCENARIO, got %d", len(args))
			}
			return nil
		},
		ValidArgsFunction: completeScenarios,
		RunE: func(cmd *cobra.Command, args []string) error {
			vars, err := sf.varMap()
			if err != nil {
				return err
			}
			spec, err := loadSpec(args[0], vars, sf.set, sf.router)
			out := cmd.OutOrStdout()
			if !asJSON {
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "%s: ok (%d prefill, %d decode, %d fused, %d links, router %q)\n",
					args[0], len(spec.Prefill), len(spec.Decode), len(spec.Fused), len(spec.Links), spec.Router.Policy)
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
			return writeJSON(out, v)
		},
	}
	sf.register(c, "override an HCL attribute: --set PATH=VALUE (repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
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

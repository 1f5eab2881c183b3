package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

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

func newModelsCmd() *cobra.Command {
	var g string
	var frac float64
	c := &cobra.Command{
		Use:   "models",
		Short: "List model presets with derived figures on a GPU",
		Long: `List the model presets (the names HCL's model = "..." accepts) with
the figures derived for --gpu: KV bytes per token, the KV pool a worker
gets at --mem-fraction, prefill and decode speeds.`,
		Example: `  pdemu models
  pdemu models --gpu H100-SXM --mem-fraction 0.9`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := gpu.LookupGPU(g); err != nil {
				hint := ""
				if s := closest(g, gpu.GPUNames()); s != "" {
					hint = fmt.Sprintf(". Did you mean %q?", s)
				}
				return usageErr("%v%s", err, hint)
			}
			return gpu.WriteTable(cmd.OutOrStdout(), g, frac)
		},
	}
	c.Flags().StringVar(&g, "gpu", "H200-SXM", "GPU preset for the derived figures ("+strings.Join(gpu.GPUNames(), ", ")+")")
	c.Flags().Float64Var(&frac, "mem-fraction", 0.88, "SGLang mem_fraction_static for the pool size")
	return c
}

// describe returns the first sentence of a scenario's leading comment,
// without the "name.hcl --" prefix.
func describe(src []byte) string {
	var para []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		text, ok := strings.CutPrefix(line, "#")
		if !ok {
			break
		}
		text = strings.TrimSpace(text)
		if text == "" {
			if len(para) > 0 {
				break
			}
			continue
		}
		para = append(para, text)
	}
	s := strings.Join(para, " ")
	if _, rest, ok := strings.Cut(s, " -- "); ok {
		s = rest
	}
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if r := []rune(s); len(r) > 100 {
		cut := string(r[:100])
		if i := strings.LastIndex(cut, " "); i > 50 {
			cut = cut[:i]
		}
		s = strings.TrimRight(cut, ",;:") + " …"
	}
	return s
}

func newScenariosCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "scenarios",
		Short: "List the embedded scenarios with a one-line description",
		Long: `List the scenarios embedded in pdemu, each with the first sentence of
its leading comment. Any of them can be named instead of a file in run,
compare and validate; 'pdemu scenarios show NAME' prints one, to copy and
edit.`,
		Example: `  pdemu scenarios
  pdemu scenarios show dp4 > my-dp4.hcl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			width := 0
			for _, n := range scenarioStems() {
				width = max(width, len(n))
			}
			for _, n := range scenarios.Names() {
				src, err := scenarios.Read(n)
				if err != nil {
					return err
				}
				mark := " "
				if n == scenarios.Default {
					mark = "*"
				}
				fmt.Fprintf(out, "%s %-*s  %s\n", mark, width, strings.TrimSuffix(n, ".hcl"), describe(src))
			}
			fmt.Fprintln(out, "(* the default; 'pdemu scenarios show NAME' prints one)")
			return nil
		},
	}
	show := &cobra.Command{
		Use:     "show NAME",
		Short:   "Print an embedded scenario's HCL",
		Example: "  pdemu scenarios show 1p3d-mlx5\n  pdemu scenarios show claude-code > my-claude-code.hcl",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("scenarios show takes exactly one NAME, got %d", len(args))
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return scenarioStems(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := scenarios.Read(args[0])
			if err != nil {
				return unknownScenario(args[0])
			}
			_, err = cmd.OutOrStdout().Write(src)
			return err
		},
	}
	c.AddCommand(show)
	return c
}

// statsJSON is trace stats --json.
type statsJSON struct {
	Requests        int      `json:"requests"`
	Sessions        int      `json:"sessions"`
	TurnsP50        int      `json:"turns_p50"`
	TurnsP90        int      `json:"turns_p90"`
	TurnsMax        int      `json:"turns_max"`
	Input           distJSON `json:"input_tokens"`
	Output          distJSON `json:"output_tokens"`
	Append          distJSON `json:"append_tokens"`
	LargeAppends    int      `json:"large_appends"`
	InterArrival    durJSON  `json:"inter_arrival_ms"`
	TurnGap         durJSON  `json:"turn_gap_ms"`
	Think           durJSON  `json:"think_ms"`
	DurationS       float64  `json:"duration_s"`
	BlockTokens     int      `json:"block_tokens"`
	TotalBlocks     int64    `json:"total_blocks"`
	UniqueBlocks    int64    `json:"unique_blocks"`
	IdealReuse      float64  `json:"ideal_reuse"`
	MisplacedBlocks int64    `json:"misplaced_blocks"`
	SkippedBad      int      `json:"skipped_bad_records"`
}

type distJSON struct {
	Mean float64 `json:"mean"`
	P50  int     `json:"p50"`
	P90  int     `json:"p90"`
	P99  int     `json:"p99"`
	Max  int     `json:"max"`
}

type durJSON struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

func toStatsJSON(st workload.Stats, skipped int) statsJSON {
	d := func(x workload.Dist) distJSON { return distJSON{x.Mean, x.P50, x.P90, x.P99, x.Max} }
	ms := func(x workload.DurDist) durJSON {
		f := func(v interface{ Seconds() float64 }) float64 { return v.Seconds() * 1000 }
		return durJSON{x.N, f(x.Mean), f(x.P50), f(x.P90), f(x.P99), f(x.Max)}
	}
	return statsJSON{
		Requests: st.Requests, Sessions: st.Sessions, TurnsP50: st.TurnsP50, TurnsP90: st.TurnsP90, TurnsMax: st.TurnsMax,
		Input: d(st.Input), Output: d(st.Output), Append: d(st.Append), LargeAppends: st.LargeAppends,
		InterArrival: ms(st.InterArrival), TurnGap: ms(st.TurnGap), Think: ms(st.Think),
		DurationS: st.Duration.Seconds(), BlockTokens: st.BlockTokens, TotalBlocks: st.TotalBlocks,
		UniqueBlocks: st.UniqueBlocks, IdealReuse: st.IdealReuse, MisplacedBlocks: st.MisplacedBlocks, SkippedBad: skipped,
	}
}

func newTraceCmd() *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:     "trace",
		Short:   "Summarise or generate traces",
		Example: "  pdemu trace stats ../shared/traces/weka-claude-code\n  pdemu trace gen --kind swebench --seed 3 --out swe.jsonl",
	})
	var format string
	var skipBad, infer, asJSON bool
	stats := &cobra.Command{
		Use:   "stats PATH",
		Short: "Summarise a trace file or directory (requests, sessions, reuse)",
		Long: `Load the trace at PATH (a file, or a directory of per-session files)
and print its size, turn, token and timing distributions and its ideal
prefix reuse; --json prints them as JSON. A malformed record stops with
its file:line (exit 2) unless --skip-bad.`,
		Example: `  pdemu trace stats ../shared/traces/mooncake/synthetic_trace.jsonl
  pdemu trace stats ../shared/traces/weka-claude-code --json
  pdemu trace stats trace.jsonl --format mooncake --infer-sessions`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("trace stats takes exactly one PATH (a file or a directory), got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := workload.Open(args[0], format, workload.LoadOptions{SkipBad: skipBad, InferSessions: infer})
			if err != nil {
				return badInput(err)
			}
			defer closeSource(src)
			st, err := workload.ComputeStats(src)
			if err != nil {
				return badInput(err)
			}
			skipped := 0
			if sk, ok := src.(workload.Skipper); ok {
				skipped = sk.Skipped()
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, toStatsJSON(st, skipped))
			}
			st.Write(out)
			if skipped > 0 {
				fmt.Fprintf(out, "skipped bad records: %d\n", skipped)
			}
			return nil
		},
	}
	stats.Flags().StringVar(&format, "format", "", "trace format ("+strings.Join(workload.Formats(), ", ")+"); default: detect")
	stats.Flags().BoolVar(&skipBad, "skip-bad", false, "skip malformed records instead of stopping")
	stats.Flags().BoolVar(&infer, "infer-sessions", false, "mooncake: group requests whose prompt extends an earlier one into sessions")
	stats.Flags().BoolVar(&asJSON, "json", false, "print the statistics as JSON")

	var kind, out string
	var seed uint64
	var sessions, requests, concurrency, activeSessions, clientCap int
	var full bool
	gen := &cobra.Command{
		Use:   "gen",
		Short: "Write a synthetic trace as Mooncake-style JSONL",
		Long: `Write a seeded synthetic trace as Mooncake-style JSONL (one request per
line with session ids): --kind swebench has the KVC-Router paper's
SWE-Bench shape (52 sessions, 4,449 requests by default), --kind agentic
is pdemu's default generator.

The trace is written in the compact form (docs/TRACES.md): a line carries
only the block ids its session's previous line does not have
(prefix_blocks + new_hash_ids), ~25x smaller than repeating them all;
pdemu reads both forms. --full writes every line's complete hash_ids, the
form other Mooncake tools read.

Two different "concurrencies" (docs/MODEL.md §7.1):
  --active-sessions N  (old name --concurrency) rewrites the timeline:
                       sessions start staggered so that N run at once,
                       compressing the 5.44 h trace (a stress setting).
  --client-cap N       the paper's "concurrency 32": a cap on the replay
                       client's outstanding requests, on the trace's own
                       timeline. A cap acts while the trace is replayed
                       (when a slot frees depends on service times), so it
                       is not written into the trace: trace gen prints the
                       --set that applies it (workload { client_cap = N }).`,
		Example: `  pdemu trace gen --kind swebench --seed 3 --out swe.jsonl
  pdemu trace gen --kind swebench --active-sessions 8 --requests 1000 --out swe-1k.jsonl
  pdemu trace gen --kind swebench --client-cap 32 --out swe.jsonl
  pdemu trace gen --kind agentic --sessions 32 > agentic.jsonl
  pdemu trace gen --kind swebench --full --out swe-full.jsonl`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var src workload.Source
			var err error
			warnFlags(cmd.ErrOrStderr(), idleGenFlags(cmd, kind))
			if concurrency != 0 && activeSessions != 0 && concurrency != activeSessions {
				return usageErr("--concurrency is the old name of --active-sessions: give one of them, not %d and %d", concurrency, activeSessions)
			}
			if activeSessions == 0 {
				activeSessions = concurrency
			}
			if activeSessions < 0 || clientCap < 0 {
				return usageErr("--active-sessions and --client-cap must be >= 0")
			}
			if kind != "swebench" && activeSessions != 0 {
				return usageErr("--active-sessions applies to --kind swebench only")
			}
			switch kind {
			case "swebench":
				src, err = workload.NewSWEBench(workload.SWEBenchConfig{Sessions: sessions, Requests: requests, ActiveSessions: activeSessions}, seed)
			case "agentic":
				src, err = workload.NewAgentic(workload.AgenticConfig{Sessions: sessions}, seed, 0)
			default:
				return usageErr("--kind must be swebench or agentic, got %q", kind)
			}
			if err != nil {
				return badInput(err)
			}
			w := cmd.OutOrStdout()
			if out != "-" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "pdemu: trace gen --kind %s --seed %d\n", kind, seed)
			write := workload.WriteCompactJSONL
			if full {
				write = workload.WriteJSONL
			}
			if err := write(w, src); err != nil {
				return err
			}
			if clientCap > 0 {
				name := out
				if name == "-" {
					name = "TRACE"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "pdemu: the client cap is applied at replay: pdemu run SCENARIO --trace %s --set workload.client_cap=%d\n", name, clientCap)
			}
			return nil
		},
	}
	gen.Flags().StringVar(&kind, "kind", "swebench", "swebench (the KVC paper's SWE-Bench shape) | agentic (pdemu's default generator)")
	gen.Flags().Uint64Var(&seed, "seed", 1, "generator seed")
	gen.Flags().StringVar(&out, "out", "-", "output file (- = stdout)")
	gen.Flags().IntVar(&sessions, "sessions", 0, "sessions (0 = the generator's default)")
	gen.Flags().IntVar(&requests, "requests", 0, "swebench: total requests (0 = 4449)")
	gen.Flags().IntVar(&activeSessions, "active-sessions", 0, "swebench: rewrite the timeline so this many sessions run at once (0 = the real 5.44 h timeline)")
	gen.Flags().IntVar(&concurrency, "concurrency", 0, "old name of --active-sessions (sessions at once, NOT the paper's client cap)")
	gen.Flags().IntVar(&clientCap, "client-cap", 0, "the paper's cap on outstanding requests, applied at replay (prints the --set to use; the trace is unchanged)")
	gen.Flags().BoolVar(&full, "full", false, "write every line's complete hash_ids (Mooncake's own form) instead of the compact form")
	c.AddCommand(stats, gen)
	return c
}

// buildVersion returns the module version and VCS revision from the
// build info.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "pdemu (no build info)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	s := "pdemu " + v
	var rev, when, dirty string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.time":
			when = kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		s += fmt.Sprintf(", revision %s%s", rev, dirty)
		if when != "" {
			s += " (" + when + ")"
		}
	} else {
		s += ", revision unknown (built without VCS info, e.g. go run or go test)"
	}
	return s + ", " + bi.GoVersion
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print pdemu's module version and VCS revision",
		Long:    "Print the module version and the VCS revision (and whether the tree was modified) recorded in the binary's build info.",
		Example: "  pdemu version",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), buildVersion())
			return nil
		},
	}
}

// noArgs rejects positional arguments as bad input (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErr("%s takes no arguments, got %s", cmd.CommandPath(), strings.Join(args, " "))
	}
	return nil
}

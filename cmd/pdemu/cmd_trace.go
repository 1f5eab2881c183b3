package main

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/tracefetch"
	"github.com/pdemu/pdemu/workload"
)

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
		Short:   "Summarise, generate or fetch traces",
		Example: "  pdemu trace stats ../shared/traces/weka-claude-code\n  pdemu trace gen --kind swebench --seed 3 --out swe.jsonl\n  pdemu trace fetch weka-claude-code",
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
		Args: exactlyOne("trace stats", "PATH (a file or a directory)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := resolveTraceName(args[0]) // or a `pdemu trace fetch` NAME
			if err != nil {
				return err
			}
			src, err := workload.Open(path, format, workload.LoadOptions{SkipBad: skipBad, InferSessions: infer})
			if err != nil {
				if h := tracefetch.Hint(path); h != "" && errors.Is(err, iofs.ErrNotExist) {
					err = fmt.Errorf("%w (%s)", err, h)
				}
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
			if st.Requests == 0 {
				// As pdemu run: an empty trace is bad input, not a
				// clean-looking table of zeros.
				return badInput(fmt.Errorf("%s: the trace has no requests (%d bad records skipped)", path, skipped))
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
	c.AddCommand(stats, gen, newTraceFetchCmd())
	return c
}

// Command pdemu emulates disaggregated prefill/decode LLM serving clusters
// described in HCL, replaying agentic workloads in virtual or wall-clock
// time, and compares runs in one HTML report.
//
//	pdemu run [SCENARIO] [--out DIR] [--set PATH=V]... [--router P] [--trace T] ...
//	pdemu compare SCENARIO... [--set PATH=V[,V...]]... [--seeds N] [--jobs N] --out DIR
//	pdemu report RUN_DIR... [--out FILE]
//	pdemu experiment kvc-paper [--out DIR] [--seeds N] [--short] [--force] [--json]
//	pdemu validate SCENARIO [--json]
//	pdemu models | scenarios [show NAME] | trace stats|gen|fetch | version | completion
//
// Exit codes: 0 success, 1 the run failed (a lost request, a panic, an
// internal error), 2 bad input (HCL, trace, flags), 3 too many failed
// requests, 130 interrupted (SIGINT), 143 terminated (SIGTERM).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/compare"
	"github.com/pdemu/pdemu/internal/suggest"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/topology"
)

// Exit codes.
const (
	exitOK          = 0
	exitRunFailed   = 1
	exitBadInput    = 2
	exitTooManyFail = 3
	exitSIGINT      = 130
	exitSIGTERM     = 143
)

const exitCodesHelp = `Exit codes:
  0    success
  1    the run failed (a lost request, an actor panic, --wall-timeout)
  2    bad input (HCL, trace, flags, unknown scenario, an --out holding
       another run's outputs without --force)
  3    more than --max-failed of the requests failed
  4    --strict-wall and the wall clock could not keep up
  130  interrupted (SIGINT, Ctrl-C): outputs written, marked partial
  143  terminated (SIGTERM): outputs written, marked partial`

// exitError carries an exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{exitBadInput, fmt.Errorf(format, a...)}
}

// badInput marks err as bad input (exit 2); nil stays nil.
func badInput(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{exitBadInput, err}
}

// exitCodeOf maps run's error to the process exit code.
func exitCodeOf(err error) int {
	if err == nil {
		return exitOK
	}
	var de *topology.DiagError
	if errors.As(err, &de) {
		return exitBadInput
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var oe *output.ExitError
	if errors.As(err, &oe) {
		return oe.Code
	}
	return exitRunFailed
}

func main() {
	if !heapProfileWanted(os.Args[1:], os.Getenv("GODEBUG")) {
		runtime.MemProfileRate = 0
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	var sig atomic.Value // the os.Signal received
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-ch
		sig.Store(s)
		cancel(actors.StopCause(signalName(s)))
		go watchdog(s)
		s2 := <-ch
		if f, ok := onSecondSignal.Load().(func(string)); ok && f != nil {
			// pdemu serve: stop waiting for the drain, still write the
			// outputs (partial); a third signal gives up at once.
			fmt.Fprintf(os.Stderr, "pdemu: %v again: not waiting for the drain; writing partial outputs (once more exits at once)\n", s2)
			f(signalName(s2))
			<-ch
		}
		os.Exit(signalCode(s))
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	code := exitCodeOf(err)
	if s, ok := sig.Load().(os.Signal); ok {
		if stopIsNormal.Load() && err == nil {
			// pdemu serve: a signal is how a server stops; it drained.
			fmt.Fprintf(os.Stderr, "pdemu: stopped by %v after a complete drain\n", s)
			os.Exit(exitOK)
		}
		if stopIsNormal.Load() {
			// pdemu serve stopped by a signal, with an error of its own
			// (too many failed: 3; a cut drain: 130/143, outputs partial).
			fmt.Fprintln(os.Stderr, "pdemu:", err)
			os.Exit(code)
		}
		fmt.Fprintf(os.Stderr, "pdemu: stopped by %v; outputs written so far are partial\n", s)
		os.Exit(signalCode(s))
	}
	if err != nil {
		var de *topology.DiagError
		if errors.As(err, &de) {
			// Say which run's scenario the diagnostics are about (compare
			// loads several: an --set may apply to one and not another).
			var le *compare.LoadError
			if errors.As(err, &le) {
				fmt.Fprintf(os.Stderr, "pdemu: run %s:\n", le.Run)
			}
			_ = de.Write(os.Stderr, false)
		} else {
			fmt.Fprintln(os.Stderr, "pdemu:", err)
		}
	}
	os.Exit(code)
}

// signalName is summary.json stopped_by for signal s.
func signalName(s os.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

func signalCode(s os.Signal) int {
	if s == syscall.SIGTERM {
		return exitSIGTERM
	}
	return exitSIGINT
}

// run executes the command line args (without the program name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := newRoot(stdout, stderr)
	root.SetArgs(normalizeArgs(root, args))
	return root.ExecuteContext(ctx)
}

// newRoot builds the command tree.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "pdemu",
		Short: "Emulate disaggregated prefill/decode LLM serving clusters",
		Long: `pdemu emulates disaggregated prefill/decode (P/D) LLM serving clusters
described in HCL, replaying agentic multi-turn workloads in virtual
(deterministic) or wall-clock time, and compares runs in one HTML report.`,
		Example: `  pdemu run                                  # the embedded default scenario
  pdemu run claude-code-dp4                  # the Claude Code sessions (../shared/traces) on 4-way DP
  pdemu compare 1p3d-mlx5 vanilla-pd-1p3d --seeds 2 --out cmp
  pdemu scenarios`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Without a subcommand: print the help and fail (exit 2); an
		// unknown subcommand gets a suggestion.
		Args: onlySubcommands,
		RunE: func(cmd *cobra.Command, args []string) error {
			_ = cmd.Help()
			return usageErr("no command given")
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return checkFlagValues(cmd) }
	root.AddCommand(newRunCmd(), newCompareCmd(), newCapacityCmd(), newServeCmd(), newExperimentCmd(), newReportCmd(), newValidateCmd(), newShowCmd(), newModelsCmd(), newGPUsCmd(),
		newScenariosCmd(), newTraceCmd(), newVersionCmd())
	// cobra's shell completion, created now so its help has examples too.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = "  pdemu completion bash > /etc/bash_completion.d/pdemu\n  source <(pdemu completion zsh)"
		for _, sh := range c.Commands() {
			sh.Example = map[string]string{
				"bash":       "  source <(pdemu completion bash)",
				"zsh":        "  pdemu completion zsh > \"${fpath[1]}/_pdemu\"",
				"fish":       "  pdemu completion fish | source",
				"powershell": "  pdemu completion powershell | Out-String | Invoke-Expression",
			}[sh.Name()]
		}
	}
	return root
}

// unknownCommand is the error for an unknown (sub)command, with cobra's
// suggestions.
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf(". Did you mean %q?", s[0])
	}
	return usageErr("%s (run '%s --help' for the commands)", msg, cmd.CommandPath())
}

// onlySubcommands is the Args check of a command whose positional
// arguments can only name a subcommand: any left is an unknown one.
func onlySubcommands(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return unknownCommand(cmd, args[0])
	}
	return nil
}

// groupCmd is a command that only holds subcommands.
func groupCmd(c *cobra.Command) *cobra.Command {
	c.Args = onlySubcommands
	c.RunE = func(cmd *cobra.Command, args []string) error {
		_ = cmd.Help()
		var names []string
		for _, s := range cmd.Commands() {
			if s.IsAvailableCommand() {
				names = append(names, s.Name())
			}
		}
		return usageErr("%s needs a subcommand: %s", cmd.CommandPath(), strings.Join(names, " or "))
	}
	return c
}

// flagError turns pflag's errors into exit-2 errors with a did-you-mean
// for a misspelt flag.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if s := suggestFlag(cmd, name); s != "" {
			msg += fmt.Sprintf(". Did you mean --%s?", s)
		}
	}
	return usageErr("%s: %s (see '%s -h')", cmd.CommandPath(), msg, cmd.CommandPath())
}

func suggestFlag(cmd *cobra.Command, name string) string {
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return closest(name, names)
}

// closest returns the candidate nearest to name (edit distance at most 2,
// or a candidate name is a prefix of), "" if none is plausible.
func closest(name string, candidates []string) string {
	return suggest.NearestOrPrefix(name, candidates)
}

// normalizeArgs keeps the single-dash long flags of the flag-package CLI
// working (-out DIR, -var k=v): "-name" becomes "--name" when name is a
// long flag of some command. Everything after "--" is left alone.
func normalizeArgs(root *cobra.Command, args []string) []string {
	long := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && long[name] {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/tracefetch"
)

// newTraceFetchCmd is `pdemu trace fetch`: the public traces the docs use,
// downloaded into the trace cache, where `--trace NAME` finds them.
func newTraceFetchCmd() *cobra.Command {
	var dir, mirror string
	var quiet bool
	c := &cobra.Command{
		Use:   "fetch [NAME...|all] [--dir DIR]",
		Short: "Download the public traces the docs use (pinned commits, SHA-256 checked, resumable)",
		Long: `Download public traces into the trace cache, from URLs pinned at a commit
of each source repository, checking every file's size and SHA-256. A file
appears under its own name only once verified; a checksum mismatch
removes the download and fails (exit 1); an interrupted download resumes
where it stopped (HTTP Range) the next time. Files already there and
verified are not downloaded again.

The cache is $PDEMU_TRACE_CACHE, else the user cache directory
(~/.cache/pdemu/traces on Linux; --dir overrides both for this command).
Each trace NAME is stored as DIR/NAME/, the layout of ../shared/traces,
and ` + "`--trace NAME`" + ` of run and compare replays it from there.

Without NAME, lists the traces, their size and whether they are in the
cache (every file there with its pinned SHA-256). The embedded default
scenario needs no trace.`,
		Example: `  pdemu trace fetch                      # list the traces
  pdemu trace fetch weka-claude-code      # 40 Claude Code sessions (27 MB)
  pdemu trace fetch all
  pdemu run claude-code --trace weka-claude-code`,
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return append(tracefetch.Names(), "all"), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				d, err := tracefetch.Dir()
				if err != nil {
					return err
				}
				dir = d
			}
			if len(args) == 0 {
				return listTraces(cmd.OutOrStdout(), dir)
			}
			traces, err := pickTraces(args)
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			f := &tracefetch.Fetcher{Dir: dir, Base: mirror}
			if !quiet {
				f.Progress = newFetchProgress(stderr)
			}
			for _, t := range traces {
				if !quiet {
					fmt.Fprintf(stderr, "pdemu: %s: %d file(s), %s, from %s at %s\n", t.Name, len(t.Files), humanBytes(t.Size()), t.Repo, t.Commit[:12])
				}
				res, err := f.Fetch(cmd.Context(), t)
				if err != nil {
					return err
				}
				var got, kept int64
				for _, r := range res {
					got += r.Downloaded
					kept += r.Resumed
				}
				if !quiet {
					what := "already in the cache, verified"
					if got > 0 {
						what = "downloaded " + humanBytes(got) + ", verified"
						if kept > 0 {
							what += " (resumed after " + humanBytes(kept) + ")"
						}
					}
					fmt.Fprintf(stderr, "pdemu: %s: %s: %s (--trace %s)\n", t.Name, what, t.Path(dir), t.Name)
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "trace cache directory (default $"+tracefetch.EnvDir+", else the user cache directory's pdemu/traces)")
	c.Flags().StringVar(&mirror, "mirror", "", "fetch from this base URL instead of https://raw.githubusercontent.com (same OWNER/REPO/COMMIT/PATH layout)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress")
	return c
}

// pickTraces maps NAME... (or all) to catalog traces, in the order given.
func pickTraces(args []string) ([]tracefetch.Trace, error) {
	var out []tracefetch.Trace
	seen := map[string]bool{}
	for _, a := range args {
		if a == "all" {
			for _, t := range tracefetch.Catalog() {
				if !seen[t.Name] {
					seen[t.Name] = true
					out = append(out, t)
				}
			}
			continue
		}
		t, ok := tracefetch.Lookup(a)
		if !ok {
			hint := ""
			if s := closest(a, tracefetch.Names()); s != "" {
				hint = fmt.Sprintf(". Did you mean %q?", s)
			}
			return nil, usageErr("trace fetch: unknown trace %q%s (known: %s, or all)", a, hint, strings.Join(tracefetch.Names(), ", "))
		}
		if !seen[t.Name] {
			seen[t.Name] = true
			out = append(out, t)
		}
	}
	return out, nil
}

func listTraces(w io.Writer, dir string) error {
	fmt.Fprintf(w, "trace cache: %s\n\n", dir)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tCACHED\tSOURCE\tLICENCE\tWHAT")
	for _, t := range tracefetch.Catalog() {
		cached := "no"
		if _, ok, err := tracefetch.Resolve(dir, t.Name); ok && err == nil {
			cached = "yes" // every file there: and each one as pinned?
			if tracefetch.Verify(dir, t) != nil {
				cached = "CHANGED (fetch again)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s@%s\t%s\t%s\n", t.Name, humanBytes(t.Size()), cached, t.Repo, t.Commit[:12], t.Licence, t.Title)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\npdemu trace fetch NAME downloads one (all: every one); then --trace NAME replays it.")
	return nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// fetchProgress is a byte progress bar per file on a terminal, and
// nothing per chunk otherwise (the command prints a line per trace).
type fetchProgress struct {
	w   io.Writer
	tty bool
	bar *progressbar.ProgressBar
}

func newFetchProgress(w io.Writer) *fetchProgress {
	return &fetchProgress{w: w, tty: isTerminal(w)}
}

func (p *fetchProgress) Start(name string, size, have int64) {
	if !p.tty {
		return
	}
	p.bar = progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(filepath.Base(name)),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionFullWidth(),
	)
	_ = p.bar.Set64(have)
}

func (p *fetchProgress) Write(b []byte) (int, error) {
	if p.bar != nil {
		_ = p.bar.Add(len(b))
	}
	return len(b), nil
}

func (p *fetchProgress) Done() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}

// resolveTraceName maps a --trace value naming a catalog trace (and not
// an existing path) to its file in the trace cache; other values are
// returned as they are. A catalog name not yet fetched is an error
// saying how to fetch it.
func resolveTraceName(v string) (string, error) {
	if _, err := os.Stat(v); err == nil || strings.ContainsRune(v, filepath.Separator) {
		return v, nil
	}
	if _, ok := tracefetch.Lookup(v); !ok {
		return v, nil
	}
	dir, err := tracefetch.Dir()
	if err != nil {
		return "", badInput(err)
	}
	p, _, err := tracefetch.Resolve(dir, v)
	if err != nil {
		return "", badInput(err)
	}
	return p, nil
}

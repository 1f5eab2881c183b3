package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/compare"
	"github.com/pdemu/pdemu/report"
)

// newReportCmd is 'pdemu report': the HTML report (and compare.csv/json)
// from existing run directories (a compare directory stands for its runs).
func newReportCmd() *cobra.Command {
	var out, plots, title, baseline string
	c := &cobra.Command{
		Use:   "report RUN_DIR... [--out FILE]",
		Short: "Build the HTML report (and compare.csv/json) from existing run directories",
		Long: `Build the report 'pdemu compare' writes from existing run directories
(each written by 'pdemu run --out' or 'pdemu compare'): one self-contained
HTML file with the comparison table and plots, opening offline, plus each
plot as an SVG file in --plots, and compare.csv and compare.json beside
FILE. A directory written by 'pdemu compare' may be given whole: its
runs/* are used. Runs of a 'pdemu compare' plan (params.json records
its digest and their rows) come in plan order, so the shards of a plan
run with --shard merge into the report of the whole plan; runs of
different plans, or a plan row missing or given twice, are refused
(exit 2) naming the rows. Runs without a plan follow in the order given.

Runs are grouped by workload (trace); each group's runs are compared with
its baseline: --baseline RUN (a run name), or the first run with status
ok; on the other workloads, the run with the same configuration. Failed,
partial and error runs are marked and refused as a baseline. Only
summary.json is required in a run directory: the page says which plots
leave a run out for want of its other files.`,
		Example: `  pdemu report out/kvc out/vanilla --out kvc-vs-vanilla.html
  pdemu report cmp                      # a compare directory: cmp/runs/*
  pdemu report cmp --baseline vanilla-pd-1p3d --out cmp/report.html`,
		Args: atLeastOne("report", "RUN_DIR", ""),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dirs, err := expandRunDirs(args)
			if err != nil {
				return err
			}
			// Shards of one plan merge in plan order; a mix of plans, or
			// a row missing or given twice, is refused (exit 2).
			if dirs, err = compare.Merge(dirs); err != nil {
				return badInput(err)
			}
			runs, err := report.LoadAll(dirs)
			if err != nil {
				return badInput(err)
			}
			if plots == "" {
				plots = filepath.Join(filepath.Dir(out), "plots")
			}
			page, err := report.BuildWith(report.Options{Title: title, BaseDir: filepath.Dir(out), Baseline: baseline}, runs)
			if err != nil {
				return badInput(err)
			}
			if err := page.Write(out, plots); err != nil {
				return err
			}
			rows, err := report.MakeRows(runs)
			if err != nil {
				return badInput(err)
			}
			dir := filepath.Dir(out)
			for name, fn := range map[string]func(*os.File) error{
				"compare.csv":  func(fh *os.File) error { return report.WriteCSV(fh, rows) },
				"compare.json": func(fh *os.File) error { return report.WriteJSON(fh, rows) },
			} {
				fh, err := os.Create(filepath.Join(dir, name))
				if err != nil {
					return err
				}
				if err := errors.Join(fn(fh), fh.Close()); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report of %d runs in %s (plots in %s)\n", len(runs), out, plots)
			for _, r := range rows {
				if r.Status != report.StatusOK {
					fmt.Fprintf(cmd.ErrOrStderr(), "pdemu: warning: run %s is %s (%s): marked in the report, not compared\n", r.Run, r.Status, r.StatusDetail)
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "report.html", "HTML file to write")
	c.Flags().StringVar(&plots, "plots", "", "directory for the SVG files (default: plots/ beside --out)")
	c.Flags().StringVar(&title, "title", "pdemu report", "report title")
	c.Flags().StringVar(&baseline, "baseline", "", "the run the others are compared with (default: the first run with status ok)")
	return c
}

// expandRunDirs replaces a compare directory (with runs/ and no
// summary.json) by its run directories.
func expandRunDirs(args []string) ([]string, error) {
	var dirs []string
	for _, a := range args {
		if _, err := os.Stat(filepath.Join(a, "summary.json")); err == nil {
			dirs = append(dirs, a)
			continue
		}
		ents, err := os.ReadDir(filepath.Join(a, "runs"))
		if err != nil {
			return nil, usageErr("%s: not a run directory (no summary.json) nor a compare directory (no runs/)", a)
		}
		var sub []string
		for _, e := range ents {
			if e.IsDir() {
				sub = append(sub, filepath.Join(a, "runs", e.Name()))
			}
		}
		sort.Strings(sub)
		dirs = append(dirs, sub...)
	}
	return dirs, nil
}

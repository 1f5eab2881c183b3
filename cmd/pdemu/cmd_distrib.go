package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/compare"
	"github.com/pdemu/pdemu/dist"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/report"
)

// distFlags are compare's flags for running beyond one machine
// (docs/DISTRIBUTED.md).
type distFlags struct {
	shard       string
	shardCount  int
	emit        string
	image       string
	parallelism int
	pvc         string
	pdemuPath   string
	cpu         string
	memory      string
}

func (d *distFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&d.shard, "shard", "", "run only plan rows with index mod N == I: I/N, or env (JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID or PDEMU_SHARD_INDEX with its count); merge with 'pdemu report DIR'")
	fl.IntVar(&d.shardCount, "shard-count", 0, "with --shard env: the number of shards (instead of PDEMU_SHARD_COUNT / SLURM_ARRAY_TASK_COUNT); with --emit: shards to emit (default: one per run)")
	fl.StringVar(&d.emit, "emit", "", "print instead of running: k8s-job (an Indexed Job and its merge Job) or slurm (an sbatch --array script)")
	fl.StringVar(&d.image, "image", "pdemu:latest", "with --emit k8s-job: the container image (pdemu on its PATH)")
	fl.IntVar(&d.parallelism, "parallelism", 0, "with --emit: shards at once (0 = all)")
	fl.StringVar(&d.pvc, "pvc", "pdemu-results", "with --emit k8s-job: the PersistentVolumeClaim for the results")
	fl.StringVar(&d.pdemuPath, "pdemu", "pdemu", "with --emit slurm: the pdemu binary every node runs")
	fl.StringVar(&d.cpu, "cpu", "1", "with --emit: CPUs per shard")
	fl.StringVar(&d.memory, "memory", "2Gi", "with --emit: memory per shard (k8s quantity; for slurm 2Gi becomes 2G)")
}

// shard parses --shard ("" = none).
func (d *distFlags) parseShard() (*compare.Shard, error) {
	if d.shard == "" {
		if d.shardCount != 0 && d.emit == "" {
			return nil, usageErr("--shard-count goes with --shard env or --emit")
		}
		return nil, nil
	}
	if d.emit != "" {
		return nil, usageErr("--shard and --emit do not go together: --emit prints the command each shard runs")
	}
	sh, err := compare.ParseShard(d.shard, d.shardCount, os.Getenv)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return &sh, nil
}

// shardArgs are the arguments one shard runs: the comparison's own
// (scenarios, axes, options) with --shard env and --out out, and --force:
// a shard owns its runs' directories, and an index retried after a crash
// must replace what the crashed attempt left (else it would exit 2, which
// fails the index for good).
func shardArgs(f *compareFlags, scens []string, out string) []string {
	args := append([]string{"compare"}, scens...)
	if f.router != "" {
		args = append(args, "--router", f.router)
	}
	if f.trace != "" {
		args = append(args, "--trace", f.trace)
	}
	if f.format != "" {
		args = append(args, "--format", f.format)
	}
	for _, s := range f.set {
		args = append(args, "--set", s)
	}
	for _, v := range f.vars {
		args = append(args, "--var", v)
	}
	if f.seeds > 1 {
		args = append(args, "--seeds", strconv.Itoa(f.seeds))
	}
	if f.maxRequests > 0 {
		args = append(args, "--max-requests", strconv.Itoa(f.maxRequests))
	}
	if f.skipBad {
		args = append(args, "--skip-bad")
	}
	if f.outputs != "" {
		args = append(args, "--outputs", f.outputs)
	}
	if f.maxFailed != output.DefaultMaxFailed {
		args = append(args, "--max-failed", strconv.FormatFloat(f.maxFailed, 'g', -1, 64))
	}
	return append(args, "--shard", "env", "--jobs", "1", "-q", "--force", "--out", out)
}

// emit prints the k8s-job or slurm form of the plan instead of running it.
func emitPlan(cmd *cobra.Command, f *compareFlags, scens []string, runs []report.Params) error {
	d := &f.dist
	n := d.shardCount
	if n > len(runs) {
		fmt.Fprintf(cmd.ErrOrStderr(), "pdemu: warning: --shard-count %d is more than the plan's %d runs: emitting %d shards (one run each)\n", n, len(runs), len(runs))
	}
	if n <= 0 || n > len(runs) {
		n = len(runs)
	}
	digest := ""
	if len(runs) > 0 {
		digest = runs[0].PlanDigest
	}
	name := "pdemu-" + strings.TrimPrefix(digest, "sha256:")
	if len(name) > len("pdemu-")+10 {
		name = name[:len("pdemu-")+10]
	}
	switch d.emit {
	case "k8s-job":
		out := dist.ResultsMount
		b, err := dist.RenderJob(dist.JobSpec{
			Name: name, Image: d.image, Args: shardArgs(f, scens, out),
			MergeArgs:   mergeArgs(out),
			Completions: n, Parallelism: d.parallelism, BackoffLimitPerIndex: 2,
			ClaimName: d.pvc, CPU: d.cpu, Memory: d.memory, Digest: digest,
		})
		if err != nil {
			return badInput(err)
		}
		_, err = cmd.OutOrStdout().Write(b)
		return err
	case "slurm":
		out, err := filepath.Abs(f.out)
		if err != nil {
			return err
		}
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		cpus, err := strconv.Atoi(d.cpu)
		if err != nil || cpus < 1 {
			return usageErr("--cpu %q: --emit slurm takes whole CPUs per task (--cpus-per-task), e.g. 1", d.cpu)
		}
		mem, ok := slurmMemory(d.memory)
		if !ok {
			return usageErr("--memory %q: --emit slurm takes an integer with K, M, G or T (Ki, Mi, Gi, Ti accepted), e.g. 2Gi", d.memory)
		}
		s, err := dist.Slurm(dist.SlurmSpec{
			Name: name, Pdemu: d.pdemuPath, Args: shardArgs(f, scens, out),
			MergeArgs: mergeArgs(out),
			Tasks:     n, Parallel: d.parallelism, Dir: wd, Logs: out, CPUs: cpus,
			Memory: mem, Digest: digest,
		})
		if err != nil {
			return badInput(err)
		}
		_, err = fmt.Fprint(cmd.OutOrStdout(), s)
		return err
	}
	return usageErr("--emit %q: want k8s-job or slurm", d.emit)
}

// shardDone ends a sharded compare: no table (the shard holds part of
// the plan), the line saying how to merge, and the runs' exit status.
func shardDone(w io.Writer, f *compareFlags, sh *compare.Shard, plan []report.Params, res *compare.Result, runErr error) error {
	if !f.quiet {
		fmt.Fprintf(w, "shard %s: %d of the plan's %d runs in %s/runs; once every shard has run: pdemu report %s --out %s\n",
			sh, len(res.Runs), len(plan), f.out, f.out, filepath.Join(f.out, "report.html"))
	}
	if runErr != nil {
		return runErr
	}
	return compareTooManyFailed(f.out, res, f.maxFailed)
}

// registerOutputs adds --outputs.
func registerOutputs(c *cobra.Command, v *string) {
	c.Flags().StringVar(v, "outputs", "", "write only these outputs of each run (comma list of "+strings.Join(output.OutputNames(), ", ")+"; default all; summary is always written)")
}

// shardNote is " (shard I/N of a P-run plan)" for a sharded compare.
func shardNote(sh *compare.Shard, plan int) string {
	if sh == nil {
		return ""
	}
	return fmt.Sprintf(" (shard %s of a %d-run plan)", sh, plan)
}

// mergeArgs is the merge step of an emitted plan: the report of every
// shard under out, titled as 'pdemu compare' titles it, so that report.html
// and plots/ too are byte-identical to one process's.
func mergeArgs(out string) []string {
	return []string{"report", out, "--out", filepath.Join(out, "report.html"), "--title", "pdemu compare"}
}

// slurmMemory turns a Kubernetes-style quantity (2Gi, 512Mi, 4G) into
// sbatch --mem's form (2G, 512M, 4G); false when it has no such form.
func slurmMemory(q string) (string, bool) {
	q = strings.TrimSuffix(q, "i")
	if len(q) < 2 || !strings.ContainsRune("KMGT", rune(q[len(q)-1])) {
		return "", false
	}
	if n, err := strconv.Atoi(q[:len(q)-1]); err != nil || n < 1 {
		return "", false
	}
	return q, true
}

package dist

import (
	"fmt"
	"strings"
)

// SlurmSpec describes a sharded 'pdemu compare' as a Slurm job array.
type SlurmSpec struct {
	Name  string // job name
	Pdemu string // the pdemu binary (a path every node sees, or a name on PATH)
	// Args are pdemu's arguments for one array task (after the program
	// name), with --shard env: the task reads SLURM_ARRAY_TASK_ID,
	// SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT.
	Args []string
	// MergeArgs are pdemu's arguments for the merge step.
	MergeArgs []string
	Tasks     int    // array tasks (>= 1)
	Parallel  int    // tasks at once (<= 0: no limit)
	Dir       string // working directory of every task ("" = the submit directory)
	Logs      string // directory for the tasks' stdout/stderr ("" = Dir)
	CPUs      int    // CPUs per task (<= 0: Slurm's default)
	Memory    string // memory per task, e.g. "2G" ("" = Slurm's default)
	Time      string // time limit per task, e.g. "02:00:00" ("" = the partition's)
	Digest    string // the plan's digest, for the comment
}

// Slurm renders the sbatch --array script: submit it with 'sbatch FILE';
// its comment gives the merge step to submit after it.
func Slurm(s SlurmSpec) (string, error) {
	if s.Tasks < 1 {
		return "", fmt.Errorf("dist: tasks must be >= 1, got %d", s.Tasks)
	}
	if s.Pdemu == "" {
		return "", fmt.Errorf("dist: the pdemu binary is required")
	}
	name := dnsLabel(s.Name, 64)
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }
	w("#!/bin/bash")
	array := fmt.Sprintf("0-%d", s.Tasks-1)
	if s.Parallel > 0 && s.Parallel < s.Tasks {
		array += fmt.Sprintf("%%%d", s.Parallel)
	}
	w("#SBATCH --job-name=%s", name)
	w("#SBATCH --array=%s", array)
	w("#SBATCH --ntasks=1")
	if s.CPUs > 0 {
		w("#SBATCH --cpus-per-task=%d", s.CPUs)
	}
	if s.Memory != "" {
		w("#SBATCH --mem=%s", s.Memory)
	}
	if s.Time != "" {
		w("#SBATCH --time=%s", s.Time)
	}
	if s.Dir != "" {
		w("#SBATCH --chdir=%s", s.Dir)
	}
	logs := s.Logs
	if logs == "" {
		logs = "."
	}
	w("#SBATCH --output=%s/%s-%%A_%%a.out", logs, name)
	w("#")
	w("# pdemu compare as a Slurm job array: %d tasks, task I runs the plan rows with index mod %d == I.", s.Tasks, s.Tasks)
	if s.Digest != "" {
		w("# Plan digest: %s", s.Digest)
	}
	w("# Submit, then merge once every task has ended (the merge exits 2 and names the rows when one")
	w("# is missing, duplicated or of another plan):")
	w("#   jid=$(sbatch --parsable THIS_FILE)")
	w("#   sbatch --dependency=afterok:$jid --job-name=%s-merge --wrap %s", name, shellQuote(ShellJoin(append([]string{s.Pdemu}, s.MergeArgs...))))
	w("# Exit 2 from a task is bad input (retrying cannot help); any other failure: 'scontrol requeue'.")
	w("set -euo pipefail")
	w("exec %s", ShellJoin(append([]string{s.Pdemu}, s.Args...)))
	return b.String(), nil
}

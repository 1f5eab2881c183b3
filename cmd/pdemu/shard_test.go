package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"

	"github.com/pdemu/pdemu/internal/testkit"
)

var shardPlan = []string{"compare", "1p3d-mlx5", "vanilla-pd-1p3d", "--seeds", "4", "--var", "sessions=3", "--max-requests", "20", "-q"}

// An 8-run plan as 3 shard processes of a Kubernetes Indexed Job (each
// with JOB_COMPLETION_INDEX, and PDEMU_SHARD_COUNT as the emitted Job
// sets it, writing to one shared results directory) and as one process:
// every run's files and the merged compare.csv are byte-identical; a
// merge with a missing, duplicated or other plan's shard exits 2 naming
// the rows.
func TestShardProcessesMatchOneProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs 4 processes")
	}
	bin := buildPdemu(t)
	base := t.TempDir()
	one, shared := filepath.Join(base, "one"), filepath.Join(base, "shared")
	pdemu := func(env []string, args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return string(out), code
	}
	out, code := pdemu(nil, append(shardPlan, "--out", one)...)
	require.Equal(t, 0, code, out)
	// As the emitted Job runs them: --shard env --force into one volume.
	index := func(i int) (string, int) {
		return pdemu([]string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i), "PDEMU_SHARD_COUNT=3"},
			append(shardPlan, "--shard", "env", "--force", "--out", shared)...)
	}
	for i := range 3 {
		out, code := index(i)
		require.Equal(t, 0, code, out)
		if i == 0 {
			_, err := os.Stat(filepath.Join(shared, "compare.csv"))
			assert.True(t, os.IsNotExist(err), "a shard writes no compare.csv of its own")
		}
	}
	// Index 1 crashed before its last summary.json was renamed into place,
	// and Kubernetes retries it: the retry replaces what it left.
	require.NoError(t, os.Remove(filepath.Join(shared, "runs", "vanilla-pd-1p3d__seed=4", "summary.json")))
	out, code = index(1)
	require.Equal(t, 0, code, out)
	out, code = pdemu(nil, "report", shared, "--out", filepath.Join(shared, "report.html"), "--title", "pdemu compare")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "report of 8 runs")

	a, b := testkit.ReadTree(t, filepath.Join(one, "runs")), testkit.ReadTree(t, filepath.Join(shared, "runs"))
	assert.Len(t, a, 8*10, "8 runs × (9 output files + params.json)")
	require.Equal(t, len(a), len(b))
	for name, content := range a {
		assert.True(t, bytes.Equal(content, b[name]), "%s differs between the shards and one process", name)
	}
	for _, f := range []string{"compare.csv", "compare.json", "plan.json", "report.html", "plots/ttft_cdf.svg", "plots/mode_mix.svg"} {
		x, err := os.ReadFile(filepath.Join(one, f))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(shared, f))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(x, y), "%s: merged shards differ from one process", f)
	}
	assert.Contains(t, string(a["vanilla-pd-1p3d__seed=3/params.json"]), `"plan_index": 6`)

	// Shards kept in separate directories (one per index).
	sep := make([]string, 3)
	for i := range 3 {
		sep[i] = filepath.Join(base, fmt.Sprintf("s%d", i))
		out, code := pdemu([]string{fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", i+1), "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_COUNT=3"},
			append(shardPlan, "--shard", "env", "--out", sep[i])...)
		require.Equal(t, 0, code, out)
	}
	rep := filepath.Join(base, "sep", "report.html")
	require.NoError(t, os.MkdirAll(filepath.Dir(rep), 0o755))
	out, code = pdemu(nil, append([]string{"report", "--out", rep}, sep[2], sep[0], sep[1])...)
	require.Equal(t, 0, code, out)
	x, _ := os.ReadFile(filepath.Join(one, "compare.csv"))
	y, _ := os.ReadFile(filepath.Join(base, "sep", "compare.csv"))
	assert.True(t, bytes.Equal(x, y), "Slurm-style shards in separate directories merge to the same compare.csv")

	bad := filepath.Join(base, "bad", "report.html")
	t.Run("missing shard", func(t *testing.T) {
		out, code := pdemu(nil, "report", sep[0], sep[2], "--out", bad)
		assert.Equal(t, 2, code, out)
		assert.Contains(t, out, "3 of the plan's 8 rows are missing")
		assert.Contains(t, out, "rows 1 (1p3d-mlx5__seed=2), 4 (vanilla-pd-1p3d__seed=1), 7 (vanilla-pd-1p3d__seed=4)")
	})
	t.Run("duplicated shard", func(t *testing.T) {
		out, code := pdemu(nil, "report", sep[0], sep[1], sep[2], filepath.Join(sep[1], "runs", "1p3d-mlx5__seed=2"), "--out", bad)
		assert.Equal(t, 2, code, out)
		assert.Contains(t, out, "row 1 (1p3d-mlx5__seed=2) is given 2 times")
		out, code = pdemu(nil, "report", shared, sep[1], "--out", bad)
		assert.Equal(t, 2, code, out)
		assert.Equal(t, 3, strings.Count(out, "is given 2 times"), "rows 1, 4 and 7: %s", out)
	})
	t.Run("different plan", func(t *testing.T) {
		other := filepath.Join(base, "other")
		out, code := pdemu([]string{"PDEMU_SHARD_INDEX=1", "PDEMU_SHARD_COUNT=3"},
			"compare", "1p3d-mlx5", "vanilla-pd-1p3d", "--seeds", "4", "--var", "sessions=3", "--max-requests", "21", "-q", "--shard", "env", "--out", other)
		require.Equal(t, 0, code, out)
		out, code = pdemu(nil, "report", sep[0], sep[2], other, "--out", bad)
		assert.Equal(t, 2, code, out)
		assert.Contains(t, out, "the runs come from 2 different plans")
		assert.Contains(t, out, "row 1 (1p3d-mlx5__seed=2), row 4 (vanilla-pd-1p3d__seed=1), row 7 (vanilla-pd-1p3d__seed=4)")
	})
}

// compare --emit prints the plan's Job and Slurm script (nothing runs):
// the Job's shards run this very plan with --shard env.
func TestCompareEmit(t *testing.T) {
	out := t.TempDir()
	stdout, _, err := runCLI(t, "compare", "1p3d-mlx5", "vanilla-pd-1p3d", "--seeds", "4", "--emit", "k8s-job", "--shard-count", "3", "--image", "me/pdemu:1", "--out", out)
	require.NoError(t, err)
	var job batchv1.Job
	require.NoError(t, yaml.UnmarshalStrict([]byte(strings.Split(stdout, "\n---\n")[0]), &job))
	assert.EqualValues(t, 3, *job.Spec.Completions)
	assert.Equal(t, []string{"compare", "1p3d-mlx5", "vanilla-pd-1p3d", "--seeds", "4", "--shard", "env", "--jobs", "1", "-q", "--force", "--out", "/results"},
		job.Spec.Template.Spec.Containers[0].Args)
	_, err = os.Stat(filepath.Join(out, "runs"))
	assert.True(t, os.IsNotExist(err), "--emit runs nothing")

	stdout, _, err = runCLI(t, "compare", "1p3d-mlx5", "--seeds", "5", "--emit", "slurm", "--out", out, "--pdemu", "/opt/pdemu")
	require.NoError(t, err)
	assert.Contains(t, stdout, "#SBATCH --array=0-4\n", "one task per run by default")
	assert.Contains(t, stdout, "exec /opt/pdemu compare 1p3d-mlx5 --seeds 5 --shard env --jobs 1 -q --force --out "+out+"\n")

	for _, c := range [][]string{
		{"--emit", "helm"},
		{"--shard", "3/3"},
		{"--shard", "0/2", "--emit", "slurm"},
		{"--shard-count", "2"},
		{"--emit", "slurm", "--cpu", "500m"},
		{"--emit", "slurm", "--memory", "1.5Gi"},
		{"--emit", "k8s-job", "--memory", "lots"},
	} {
		_, _, err := runCLI(t, append([]string{"compare", "1p3d-mlx5", "--out", out}, c...)...)
		assert.Equal(t, 2, exitCode(err), "%v: %v", c, err)
	}
}

// --outputs keeps only the files asked for (summary.json always, listing
// them); compare.csv from summary and per_request equals the one from
// every file.
func TestOutputsSubset(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runCLI(t, "run", "--outputs", "per_request", "--var", "sessions=3", "--max-requests", "20", "-q", "--out", dir)
	require.NoError(t, err)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"per_request.csv", "summary.json"}, names, "no other file, not even a temporary one")
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "\"written\": [\n      \"per_request.csv\",\n      \"summary.json\"\n    ]")

	all, some := t.TempDir(), t.TempDir()
	plan := []string{"compare", "1p3d-mlx5", "--seeds", "2", "--var", "sessions=3", "--max-requests", "20", "-q"}
	_, _, err = runCLI(t, append(plan, "--out", all)...)
	require.NoError(t, err)
	_, _, err = runCLI(t, append(plan, "--out", some, "--outputs", "summary,per_request")...)
	require.NoError(t, err)
	x, _ := os.ReadFile(filepath.Join(all, "compare.csv"))
	y, _ := os.ReadFile(filepath.Join(some, "compare.csv"))
	assert.Equal(t, string(x), string(y))

	_, _, err = runCLI(t, "run", "--outputs", "routing", "--out", t.TempDir())
	assert.Equal(t, 2, exitCode(err))
	assert.ErrorContains(t, err, `unknown output "routing"`)
}

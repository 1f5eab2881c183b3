package compare_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/compare"
	"github.com/pdemu/pdemu/report"
	"github.com/pdemu/pdemu/topology"
)

func TestParseShard(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cases := []struct {
		name  string
		s     string
		count int
		env   func(string) string
		want  compare.Shard
		err   string
	}{
		{"explicit", "2/5", 0, env(), compare.Shard{2, 5}, ""},
		{"one shard", "0/1", 0, env(), compare.Shard{0, 1}, ""},
		{"index out of range", "5/5", 0, env(), compare.Shard{}, "index must be in [0, 5), got 5"},
		{"negative", "-1/3", 0, env(), compare.Shard{}, "got -1"},
		{"zero count", "0/0", 0, env(), compare.Shard{}, "count must be >= 1"},
		{"no slash", "3", 0, env(), compare.Shard{}, "want I/N"},
		{"not a number", "a/3", 0, env(), compare.Shard{}, `index "a" is not an integer`},
		{"count flag without env", "1/3", 4, env(), compare.Shard{}, "--shard-count goes with --shard env"},
		{"kubernetes", "env", 0, env("JOB_COMPLETION_INDEX", "3", "PDEMU_SHARD_COUNT", "8"), compare.Shard{3, 8}, ""},
		{"kubernetes, count flag", "env", 8, env("JOB_COMPLETION_INDEX", "7"), compare.Shard{7, 8}, ""},
		{"kubernetes without count", "env", 0, env("JOB_COMPLETION_INDEX", "3"), compare.Shard{}, "set PDEMU_SHARD_COUNT to the Job's completions"},
		{"kubernetes index too big", "env", 0, env("JOB_COMPLETION_INDEX", "8", "PDEMU_SHARD_COUNT", "8"), compare.Shard{}, `JOB_COMPLETION_INDEX="8"`},
		{"slurm from 0", "env", 0, env("SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_COUNT", "3"), compare.Shard{2, 3}, ""},
		{"slurm from 1", "env", 0, env("SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_COUNT", "3"), compare.Shard{0, 3}, ""},
		{"slurm without count", "env", 0, env("SLURM_ARRAY_TASK_ID", "1"), compare.Shard{}, "SLURM_ARRAY_TASK_COUNT is not"},
		{"slurm bad id", "env", 0, env("SLURM_ARRAY_TASK_ID", "x", "SLURM_ARRAY_TASK_COUNT", "3"), compare.Shard{}, `SLURM_ARRAY_TASK_ID="x" is not an integer`},
		{"generic", "env", 0, env("PDEMU_SHARD_INDEX", "1", "PDEMU_SHARD_COUNT", "2"), compare.Shard{1, 2}, ""},
		{"generic wins", "env", 0, env("PDEMU_SHARD_INDEX", "1", "PDEMU_SHARD_COUNT", "2", "JOB_COMPLETION_INDEX", "0"), compare.Shard{1, 2}, ""},
		{"generic without count", "env", 0, env("PDEMU_SHARD_INDEX", "1"), compare.Shard{}, "set both"},
		{"nothing set", "env", 0, env(), compare.Shard{}, "none of PDEMU_SHARD_INDEX"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := compare.ParseShard(c.s, c.count, c.env)
			checkCase(t, got, err, c.want, c.err)
		})
	}
}

// randomPlan draws a plan of 1..~200 runs over every axis.
func randomPlan(t *rapid.T) compare.Plan {
	scen := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"1p3d-mlx5", "dp4", "vanilla-pd-1p3d", "a/b.hcl"}), 1, 3, rapid.ID[string]).Draw(t, "scenarios")
	p := compare.Plan{Scenarios: scen, Seeds: rapid.IntRange(1, 4).Draw(t, "seeds")}
	if rapid.Bool().Draw(t, "routers") {
		p.Routers = rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"kvc", "vanilla", "sticky_only"}), 1, 3, rapid.ID[string]).Draw(t, "router")
	}
	for i, n := 0, rapid.IntRange(0, 2).Draw(t, "axes"); i < n; i++ {
		vals := rapid.IntRange(1, 3).Draw(t, "values")
		s := fmt.Sprintf("router.x%d=", i)
		for v := range vals {
			if v > 0 {
				s += ","
			}
			s += strconv.Itoa(1000 * (v + 1))
		}
		p.Set = append(p.Set, s)
	}
	return p
}

// The shards of any plan partition it: every row in exactly one shard,
// each shard in plan order, every row stamped with its index and one
// digest that does not depend on the shard.
func TestShardsPartitionAnyPlan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := randomPlan(t)
		runs, err := p.Runs()
		require.NoError(t, err)
		again, err := p.Runs()
		require.NoError(t, err)
		require.Equal(t, runs, again, "expansion is deterministic")
		n := rapid.IntRange(1, len(runs)+3).Draw(t, "shards")
		seen := make([]int, len(runs))
		for i := range n {
			sh := compare.Shard{Index: i, Count: n}
			last := -1
			for _, r := range sh.Select(runs) {
				require.NotNil(t, r.PlanIndex)
				idx := *r.PlanIndex
				require.Greater(t, idx, last, "plan order within a shard")
				last = idx
				require.Equal(t, runs[idx].Name, r.Name)
				require.Equal(t, i, idx%n)
				seen[idx]++
			}
		}
		for idx, c := range seen {
			require.Equal(t, 1, c, "row %d in %d shards", idx, c)
			require.Equal(t, len(runs), runs[idx].PlanSize)
			require.Equal(t, runs[0].PlanDigest, runs[idx].PlanDigest)
		}
		// Any change to the plan changes the digest.
		q := p
		q.MaxRequests = p.MaxRequests + 1
		other, err := q.Runs()
		require.NoError(t, err)
		require.NotEqual(t, runs[0].PlanDigest, other[0].PlanDigest)
	})
}

// writeShards lays out runs as compare would (out/plan.json and
// out/runs/<name>/params.json; Merge reads nothing else) for the rows
// keep selects.
func writeShards(t *testing.T, out string, runs []report.Params, keep func(i int) bool) []string {
	t.Helper()
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, compare.WritePlan(out, runs))
	var dirs []string
	for i, r := range runs {
		if !keep(i) {
			continue
		}
		d := compare.RunDir(out, r.Name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, report.WriteParams(d, r))
		require.NoError(t, os.WriteFile(filepath.Join(d, "summary.json"), []byte("{}\n"), 0o644))
		dirs = append(dirs, d)
	}
	return dirs
}

func TestMerge(t *testing.T) {
	runs, err := compare.Plan{Scenarios: []string{"1p3d-mlx5", "dp4"}, Seeds: 4}.Runs()
	require.NoError(t, err)
	require.Len(t, runs, 8)
	all := func(int) bool { return true }

	t.Run("shards in any order merge in plan order", func(t *testing.T) {
		base := t.TempDir()
		var dirs []string
		for i := 2; i >= 0; i-- { // shard 2 first
			dirs = append(dirs, writeShards(t, filepath.Join(base, strconv.Itoa(i)), runs, func(j int) bool { return j%3 == i })...)
		}
		got, err := compare.Merge(dirs)
		require.NoError(t, err)
		require.Len(t, got, 8)
		for i, d := range got {
			assert.Equal(t, runs[i].Name, filepath.Base(d))
		}
	})
	t.Run("a run that did not finish is named", func(t *testing.T) {
		dirs := writeShards(t, t.TempDir(), runs, all)
		require.NoError(t, os.Remove(filepath.Join(dirs[5], "summary.json")))
		_, err := compare.Merge(dirs)
		var me *compare.MergeError
		require.ErrorAs(t, err, &me)
		assert.Contains(t, err.Error(), "1 run(s) did not finish (no summary.json: a shard still running, or crashed; run it again): "+dirs[5])
		assert.Contains(t, err.Error(), "rows 5 (dp4__seed=2)")
		_, err = compare.Merge([]string{t.TempDir()})
		assert.ErrorContains(t, err, "did not finish", "a plain directory without summary.json too")
	})
	t.Run("runs without a plan follow, as given", func(t *testing.T) {
		dirs := writeShards(t, t.TempDir(), runs, all)
		lone := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(lone, "summary.json"), []byte("{}\n"), 0o644))
		got, err := compare.Merge(append([]string{lone}, dirs...))
		require.NoError(t, err)
		assert.Equal(t, append(dirs, lone), got)
		only, err := compare.Merge([]string{lone})
		require.NoError(t, err)
		assert.Equal(t, []string{lone}, only)
	})
	t.Run("missing shard names its rows", func(t *testing.T) {
		dirs := writeShards(t, t.TempDir(), runs, func(i int) bool { return i%3 != 1 })
		_, err := compare.Merge(dirs)
		var me *compare.MergeError
		require.ErrorAs(t, err, &me)
		assert.Contains(t, err.Error(), "3 of the plan's 8 rows are missing")
		assert.Contains(t, err.Error(), "rows 1 (1p3d-mlx5__seed=2), 4 (dp4__seed=1), 7 (dp4__seed=4)")
	})
	t.Run("duplicated shard names its rows and directories", func(t *testing.T) {
		a := writeShards(t, t.TempDir(), runs, all)
		b := writeShards(t, t.TempDir(), runs, func(i int) bool { return i%3 == 2 })
		_, err := compare.Merge(append(a, b...))
		var me *compare.MergeError
		require.ErrorAs(t, err, &me)
		assert.Len(t, me.Problems, 2, "rows 2 and 5")
		assert.Contains(t, err.Error(), "row 2 (1p3d-mlx5__seed=3) is given 2 times: ")
		assert.Contains(t, err.Error(), "row 5 (dp4__seed=2) is given 2 times")
		assert.Contains(t, err.Error(), b[0])
	})
	t.Run("different plan names both plans' rows", func(t *testing.T) {
		other, err := compare.Plan{Scenarios: []string{"1p3d-mlx5", "dp4"}, Seeds: 4, MaxRequests: 10}.Runs()
		require.NoError(t, err)
		a := writeShards(t, t.TempDir(), runs, func(i int) bool { return i%2 == 0 })
		b := writeShards(t, t.TempDir(), other, func(i int) bool { return i%2 == 1 })
		_, err = compare.Merge(append(a, b...))
		var me *compare.MergeError
		require.ErrorAs(t, err, &me)
		assert.Contains(t, err.Error(), "the runs come from 2 different plans")
		assert.Contains(t, err.Error(), "plan "+runs[0].PlanDigest[:19]+" (8 rows): 4 run(s) given: row 0 (1p3d-mlx5__seed=1), row 2")
		assert.Contains(t, err.Error(), "plan "+other[0].PlanDigest[:19]+" (8 rows): 4 run(s) given: row 1 (1p3d-mlx5__seed=2)")
	})
}

// Rows of one scenario that read different files, or rows of different
// pdemu versions, do not merge: the plan digest cannot see either.
func TestMergeChecksSummaries(t *testing.T) {
	runs, err := compare.Plan{Scenarios: []string{"1p3d-mlx5"}, Seeds: 3}.Runs()
	require.NoError(t, err)
	trace := "sha256:1111"
	summary := func(version, digest string) []byte {
		return []byte(fmt.Sprintf(`{"pdemu_version": %q, "scenario_digest": %q, "trace": {"digest": %q}}`, version, digest, trace))
	}
	write := func(dirs []string, sums ...[]byte) {
		for i, d := range dirs {
			require.NoError(t, os.WriteFile(filepath.Join(d, "summary.json"), sums[i], 0o644))
		}
	}
	dirs := writeShards(t, t.TempDir(), runs, func(int) bool { return true })
	write(dirs, summary("v1", "sha256:aaaa"), summary("v1", "sha256:aaaa"), summary("v1", "sha256:aaaa"))
	_, err = compare.Merge(dirs)
	require.NoError(t, err)

	write(dirs, summary("v1", "sha256:aaaa"), summary("v1", "sha256:bbbb"), summary("v2", "sha256:aaaa"))
	_, err = compare.Merge(dirs)
	var me *compare.MergeError
	require.ErrorAs(t, err, &me)
	assert.Contains(t, err.Error(), "rows 0 and 1 (1p3d-mlx5__seed=2) read different files for scenario 1p3d-mlx5")
	assert.Contains(t, err.Error(), "rows 0 and 2 (1p3d-mlx5__seed=3) were run by different pdemu versions (v1 and v2)")

	write(dirs[:2], summary("v1", "sha256:aaaa"), summary("v1", "sha256:aaaa"))
	trace = "sha256:2222"
	write(dirs[2:], summary("v1", "sha256:aaaa"))
	_, err = compare.Merge(dirs)
	assert.ErrorContains(t, err, "rows 0 and 2 (1p3d-mlx5__seed=3) replayed different trace files")
}

// Execute with a shard runs only its rows, writes plan.json and no
// comparison of its own; every row was still loaded (a bad row in another
// shard stops this one too).
func TestExecuteShard(t *testing.T) {
	runs := smallPlan(t)
	out := t.TempDir()
	loaded := 0
	load := func(p report.Params) (*topology.Spec, error) { loaded++; return testLoad(p) }
	res, err := compare.Execute(context.Background(), runs, compare.Options{Out: out, Jobs: 1, Load: load, Shard: &compare.Shard{Index: 1, Count: 3}})
	require.NoError(t, err)
	assert.Equal(t, 8, loaded, "the whole plan is loaded and checked")
	var names []string
	for _, r := range res.Runs {
		names = append(names, r.Name)
	}
	assert.Equal(t, []string{runs[1].Name, runs[4].Name, runs[7].Name}, names)
	assert.Empty(t, res.Rows)
	assert.NoFileExists(t, filepath.Join(out, "compare.csv"))
	assert.FileExists(t, filepath.Join(out, compare.PlanFile))
	ents, err := os.ReadDir(filepath.Join(out, "runs"))
	require.NoError(t, err)
	assert.Len(t, ents, 3)

	bad := append([]report.Params(nil), runs...)
	bad[6].Set = []string{"workload.nope=1"}
	_, err = compare.Execute(context.Background(), bad, compare.Options{Out: t.TempDir(), Load: testLoad, Shard: &compare.Shard{Index: 0, Count: 3}})
	var le *compare.LoadError
	require.ErrorAs(t, err, &le, "row 6 is shard 0's, but any row's bad input stops every shard")
	bad[6] = runs[6]
	bad[5].Set = []string{"workload.nope=1"}
	_, err = compare.Execute(context.Background(), bad, compare.Options{Out: t.TempDir(), Load: testLoad, Shard: &compare.Shard{Index: 0, Count: 3}})
	require.ErrorAs(t, err, &le, "row 5 is shard 2's, and stops shard 0 too")
}

// For any plan and shard count, the shards' run directories given in any
// order merge into plan order; dropping any shard's directory is refused
// and names exactly the rows dropped.
func TestMergeProperty(t *testing.T) {
	base := t.TempDir()
	n := 0
	rapid.Check(t, func(t *rapid.T) {
		p := randomPlan(t)
		runs, err := p.Runs()
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) > 60 {
			return // the partition property covers big plans; this one writes files
		}
		shards := rapid.IntRange(1, len(runs)+2).Draw(t, "shards")
		n++
		root := filepath.Join(base, strconv.Itoa(n))
		var dirs []string
		byShard := map[int][]string{}
		for i, r := range runs {
			out := filepath.Join(root, strconv.Itoa(i%shards))
			d := compare.RunDir(out, r.Name)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := report.WriteParams(d, r); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "summary.json"), []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, d)
			byShard[i%shards] = append(byShard[i%shards], d)
		}
		perm := rapid.Permutation(dirs).Draw(t, "order")
		got, err := compare.Merge(perm)
		if err != nil {
			t.Fatalf("complete plan refused: %v", err)
		}
		for i, d := range got {
			if d != dirs[i] {
				t.Fatalf("row %d: got %s, want %s", i, d, dirs[i])
			}
		}
		if shards < 2 || len(runs) < 2 {
			return // dropping a shard must leave some runs to merge
		}
		drop := rapid.IntRange(0, min(shards, len(runs))-1).Draw(t, "drop") // a shard with rows
		var kept []string
		for s := range shards {
			if s != drop {
				kept = append(kept, byShard[s]...)
			}
		}
		_, err = compare.Merge(kept)
		var me *compare.MergeError
		if !errors.As(err, &me) {
			t.Fatalf("shard %d of %d dropped, merge gave %v", drop, shards, err)
		}
		want := fmt.Sprintf("%d of the plan's %d rows are missing", len(byShard[drop]), len(runs))
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("want %q in %v", want, err)
		}
	})
}

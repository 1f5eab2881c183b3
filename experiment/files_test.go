package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/topology"
)

// runFiles lists the runnable experiment files (kvcpaper/*.hcl, without
// ".hcl"); the bases under kvcpaper/base/ are not among them.
func runFiles(t *testing.T) []string {
	t.Helper()
	ents, err := files.ReadDir("kvcpaper")
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".hcl") {
			names = append(names, strings.TrimSuffix(e.Name(), ".hcl"))
		}
	}
	require.NotEmpty(t, names)
	return names
}

// allFiles lists every embedded experiment file, bases included.
func allFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	require.NoError(t, fs.WalkDir(files, "kvcpaper", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".hcl") {
			out = append(out, p)
		}
		return err
	}))
	sort.Strings(out)
	return out
}

// Every run of the experiment (short and full) names a runnable file, and
// every runnable file is run; the bases are not runs and do not parse on
// their own (no router).
func TestRunsUseOnlyRunnableFiles(t *testing.T) {
	runnable := map[string]bool{}
	for _, f := range runFiles(t) {
		runnable[f] = true
	}
	used := map[string]bool{}
	for _, short := range []bool{true, false} {
		for _, d := range kvcPaperDefs([]uint64{1, 2, 3}, short) {
			assert.True(t, runnable[d.file], "run %s: %q is not a runnable kvcpaper/*.hcl file", d.name, d.file)
			used[d.file] = true
		}
	}
	for f := range runnable {
		assert.True(t, used[f], "kvcpaper/%s.hcl is not run by the experiment", f)
	}
	bases := 0
	for _, p := range allFiles(t) {
		if path.Dir(p) != "kvcpaper/base" {
			continue
		}
		bases++
		_, err := topology.ParseFS(experimentFS{}, filePrefix+p, parseOptions(nil))
		require.Error(t, err, p)
		assert.Contains(t, err.Error(), "Missing router block", p)
	}
	assert.Positive(t, bases)
}

// sharedRuns reports every run of n identical lines of code (comments
// and blank lines left out, lines trimmed) that appears in two of srcs,
// visited in names order.
func sharedRuns(names []string, srcs map[string]string, n int) []string {
	var out []string
	seen := map[string]string{}
	for _, f := range names {
		var lines []string
		for _, line := range strings.Split(srcs[f], "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
		}
		for i := 0; i+n <= len(lines); i++ {
			key := strings.Join(lines[i:i+n], "\n")
			if prev, ok := seen[key]; ok && prev != f {
				out = append(out, fmt.Sprintf("%s and %s share %d lines:\n%s", prev, f, n, key))
			}
			seen[key] = f
		}
	}
	return out
}

func readAll(t *testing.T) ([]string, map[string]string) {
	t.Helper()
	names := allFiles(t)
	srcs := map[string]string{}
	for _, f := range names {
		b, err := files.ReadFile(f)
		require.NoError(t, err)
		srcs[f] = string(b)
	}
	return names, srcs
}

// No block is copied between two experiment files: no run of six or more
// identical lines of code (comments and blank lines left out) appears in
// two files, and the files stay at most half the 913 lines they had before
// extends and dynamic blocks.
func TestKVCPaperFilesHaveNoCopies(t *testing.T) {
	names, srcs := readAll(t)
	total := 0
	for _, src := range srcs {
		total += strings.Count(src, "\n")
	}
	assert.LessOrEqual(t, total, 913/2, "experiment file lines")
	for _, c := range sharedRuns(names, srcs, 6) {
		t.Error(c)
	}
}

// The check above finds a copied block: kvc-tcp.hcl's router block pasted
// into another file, and the copies between the 1P3D files as they were
// before extends (their P->D links).
func TestNoCopiesCheckFindsACopy(t *testing.T) {
	names, srcs := readAll(t)
	kvc := srcs["kvcpaper/kvc-tcp.hcl"]
	i := strings.Index(kvc, "router \"kvc\" {")
	require.GreaterOrEqual(t, i, 0)
	srcs["kvcpaper/zz-copy.hcl"] = "name = \"copy\"\n\n" + kvc[i:]
	got := sharedRuns(append(names, "kvcpaper/zz-copy.hcl"), srcs, 6)
	require.NotEmpty(t, got)
	assert.Contains(t, got[0], "kvcpaper/kvc-tcp.hcl and kvcpaper/zz-copy.hcl share 6 lines")

	link := "link \"p0\" \"d0\" {\n  transport = \"tcp\"\n  device    = \"lo\"\n  bandwidth = \"200Gbps\"\n  max_rate  = \"1.5GB/s\"\n  latency   = \"50us\"\n}\n"
	old := map[string]string{"a.hcl": "# a\nname = \"a\"\n" + link, "b.hcl": "# b\nname = \"b\"\n\n" + link}
	assert.Len(t, sharedRuns([]string{"a.hcl", "b.hcl"}, old, 6), 2, "7 shared lines are two runs of 6")
}

// loadDisk parses experiment/kvcpaper/<file>.hcl from disk as `pdemu run`
// does (topology.Load: extends resolved on disk).
func loadDisk(t *testing.T, file string, vars map[string]string) *topology.Spec {
	t.Helper()
	spec, err := topology.Load(filepath.Join("kvcpaper", file+".hcl"), parseOptions(vars))
	require.NoError(t, err, file)
	return spec
}

// `pdemu run experiment/kvcpaper/NAME.hcl` reads the scenario the
// experiment runs: the same spec and the same digest (the same bytes,
// base first), only the file name differs.
func TestFilesOnDiskAreTheExperiments(t *testing.T) {
	for _, short := range []bool{true, false} {
		for _, d := range kvcPaperDefs([]uint64{1, 2}, short) {
			vars := map[string]string{"seed": itoa(d.seed)}
			for k, v := range d.vars {
				vars[k] = v
			}
			emb, err := loadSpec(d.file, vars)
			require.NoError(t, err, d.name)
			disk := loadDisk(t, d.file, vars)
			assert.Equal(t, filePrefix+"kvcpaper/"+d.file+".hcl", emb.Source)
			assert.Equal(t, filepath.Join("kvcpaper", d.file+".hcl"), disk.Source)
			disk.Source = emb.Source
			assert.Equal(t, emb, disk, d.name)
		}
	}
}

// TestDiskRunReplaysTheExperimentsRun: `pdemu run
// experiment/kvcpaper/kvc-tcp.hcl` (the file on disk, its workload block
// as the source) writes the per-request records, sessions, instances,
// links and routing log of the experiment's run v2-tcp-s1, byte for byte;
// summary.json differs only in the run's name and -var values.
func TestDiskRunReplaysTheExperimentsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("two full emulations")
	}
	ctx := context.Background()
	var def runDef
	for _, d := range kvcPaperDefs([]uint64{1}, false) {
		if d.name == "v2-tcp-s1" {
			def = d
		}
	}
	require.Equal(t, "kvc-tcp", def.file)
	expDir, cliDir := t.TempDir(), filepath.Join(t.TempDir(), "cli")
	log := hclog.NewNullLogger()
	_, err := runOne(ctx, def, Options{OutDir: expDir}, log, false)
	require.NoError(t, err)

	spec := loadDisk(t, "kvc-tcp", nil)
	res, err := actors.Run(ctx, spec, actors.Options{Logger: log})
	require.NoError(t, err)
	require.NoError(t, output.Write(cliDir, res, output.WriteOptions{}))

	expRun := filepath.Join(expDir, "runs", def.name)
	ents, err := os.ReadDir(expRun)
	require.NoError(t, err)
	require.NotEmpty(t, ents)
	for _, e := range ents {
		a, err := os.ReadFile(filepath.Join(expRun, e.Name()))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(cliDir, e.Name()))
		require.NoError(t, err, e.Name())
		if e.Name() != "summary.json" {
			assert.True(t, string(a) == string(b), "%s differs", e.Name())
			continue
		}
		var sa, sb map[string]any
		require.NoError(t, json.Unmarshal(a, &sa))
		require.NoError(t, json.Unmarshal(b, &sb))
		assert.Equal(t, "v2-tcp-s1", sa["scenario"])
		assert.Equal(t, "kvc-paper-kvc-tcp", sb["scenario"])
		assert.Equal(t, sa["scenario_digest"], sb["scenario_digest"])
		for _, k := range []string{"scenario", "vars"} {
			delete(sa, k)
			delete(sb, k)
		}
		assert.Equal(t, sa, sb)
	}
}

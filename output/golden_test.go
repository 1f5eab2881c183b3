package output_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/cluster/clustertest"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// -update rewrites the golden files from the current code. Every change of
// output is then a deliberate, reviewed diff under testdata/golden.
var update = flag.Bool("update", false, "rewrite testdata/golden from the current outputs")

// runScenario runs an embedded scenario and writes its outputs into a
// fresh directory. ok is false when the scenario names a trace that is not
// on this machine (no ../shared beside the repository).
func runScenario(t *testing.T, name string) (dir string, ok bool) {
	return runScenarioOpts(t, name, actors.Options{})
}

func runScenarioOpts(t *testing.T, name string, opts actors.Options) (dir string, ok bool) {
	t.Helper()
	spec := testkit.Scenario(t, name, topology.Options{})
	if testkit.TraceMissing(spec) {
		return "", false
	}
	res, err := actors.Run(context.Background(), spec, opts)
	require.NoError(t, err)
	dir = t.TempDir()
	res.Summary.PdemuVersion = "golden"                            // the build's version is not part of the golden output
	res.Summary.Trace.Path = filepath.Base(res.Summary.Trace.Path) // the checkout's location is not part of the golden output
	require.NoError(t, output.Write(dir, res, output.WriteOptions{}))
	return dir, true
}

// large are the embedded scenarios that take seconds each (the scaled
// clusters: 16p48d and 64p192d were ~75 % of a plain go test ./...). Their
// golden and in-memory cases run only when PDEMU_SCALED=1 (.ci/run sets
// it), never under -short: a developer's go test ./... stays quick, CI
// still pins their outputs.
var large = map[string]bool{"16p48d.hcl": true, "64p192d.hcl": true}

// scaledEnv is the environment variable that opts in to the large
// scenarios' tests.
const scaledEnv = "PDEMU_SCALED"

func skipLarge(t *testing.T, name string) {
	t.Helper()
	if !large[name] {
		return
	}
	if testing.Short() {
		t.Skip("-short: a large cluster")
	}
	if os.Getenv(scaledEnv) != "1" {
		t.Skip("a large cluster: set " + scaledEnv + "=1 to run it (.ci/run does)")
	}
}

// digests lists every file of dir with its SHA-256, one "name  hash" line
// each, sorted by name.
func digests(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var lines []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		lines = append(lines, fmt.Sprintf("%s  %s", e.Name(), hex.EncodeToString(sum[:])))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

// TestGolden pins the virtual-clock outputs of every embedded scenario:
// summary.json in full, every output file by its SHA-256. Run with -update
// after a deliberate change of behaviour and review the diff.
func TestGolden(t *testing.T) {
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			skipLarge(t, name)
			dir, ok := runScenario(t, name)
			if !ok {
				t.Skip("trace not on this machine (../shared/traces)")
			}
			checkKVCause(t, dir) // kvcause_test.go: on the same run
			gold := filepath.Join("testdata", "golden", strings.TrimSuffix(name, ".hcl"))
			sum, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			require.NoError(t, err)
			dig := digests(t, dir)
			if *update {
				require.NoError(t, os.MkdirAll(gold, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(gold, "summary.json"), sum, 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(gold, "digests.txt"), []byte(dig), 0o644))
				return
			}
			want, err := os.ReadFile(filepath.Join(gold, "summary.json"))
			require.NoError(t, err, "no golden file: run go test ./output -run TestGolden -update")
			require.Equal(t, string(want), string(sum), "summary.json changed; if deliberate, rerun with -update and review the diff")
			wantDig, err := os.ReadFile(filepath.Join(gold, "digests.txt"))
			require.NoError(t, err)
			require.Equal(t, string(wantDig), dig, "an output file changed; if deliberate, rerun with -update and review the diff")
		})
	}
}

// TestMetamorphicGOMAXPROCS: the same scenario under GOMAXPROCS 1 and the
// machine's setting writes byte-identical outputs (virtual time does not
// depend on scheduling).
func TestMetamorphicGOMAXPROCS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for _, name := range []string{scenarios.Default, "buckets-3.hcl", "dp4.hcl", "chaos.hcl"} {
		t.Run(name, func(t *testing.T) {
			a, _ := runScenario(t, name)
			prev := runtime.GOMAXPROCS(1)
			b, _ := runScenario(t, name)
			runtime.GOMAXPROCS(prev)
			require.Equal(t, digests(t, a), digests(t, b))
		})
	}
}

// TestMetamorphicFreshSystem: a pooled actor system (reused across runs)
// and a fresh one write byte-identical outputs. (TestMetamorphicInMemory
// compares the actors with no actors at all.)
func TestMetamorphicFreshSystem(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for _, name := range []string{scenarios.Default, "buckets-3.hcl"} {
		t.Run(name, func(t *testing.T) {
			a, _ := runScenario(t, name)
			b, _ := runScenarioOpts(t, name, actors.Options{FreshSystem: true})
			require.Equal(t, digests(t, a), digests(t, b))
		})
	}
}

// TestMetamorphicInMemory: every embedded scenario run through clustertest's
// in-memory network (the cluster tier without protoactor, delivering in the
// virtual clock's order) writes the per_request.csv that the actors write:
// its SHA-256 is the golden one TestGolden checks the actors against.
func TestMetamorphicInMemory(t *testing.T) {
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			skipLarge(t, name)
			spec := testkit.Scenario(t, name, topology.Options{})
			if spec.Workload.Trace != "" && testing.Short() {
				t.Skip("-short: generator scenarios only")
			}
			testkit.SkipWithoutTrace(t, spec)
			src, err := actors.Source(spec, false)
			require.NoError(t, err)
			if c, ok := src.(io.Closer); ok {
				defer c.Close()
			}
			net, err := clustertest.New(spec, src)
			require.NoError(t, err)
			require.NoError(t, net.Run())
			var mem bytes.Buffer
			require.NoError(t, metrics.WritePerRequest(&mem, net.Cluster.Collector().Records()))
			sum := sha256.Sum256(mem.Bytes())
			dig, err := os.ReadFile(filepath.Join("testdata", "golden", strings.TrimSuffix(name, ".hcl"), "digests.txt"))
			require.NoError(t, err)
			require.Contains(t, string(dig), "per_request.csv  "+hex.EncodeToString(sum[:])+"\n",
				"per_request.csv differs between the in-memory network and the actors' golden output")
		})
	}
}

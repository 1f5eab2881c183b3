package output_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// streamScenario runs an embedded scenario streaming its records to an
// output.Stream (as pdemu run does) with the given reorder bound and
// returns the run directory and the number of runs the stream spilled.
func streamScenario(t *testing.T, name string, bound int) (dir string, spilled int, ok bool) {
	t.Helper()
	dir = t.TempDir()
	spilled, ok = streamInto(t, dir, name, output.StreamOptions{ReorderBytes: bound})
	return dir, spilled, ok
}

// streamInto is streamScenario into dir with opts.
func streamInto(t *testing.T, dir, name string, opts output.StreamOptions) (spilled int, ok bool) {
	t.Helper()
	spec := testkit.Scenario(t, name, topology.Options{})
	if testkit.TraceMissing(spec) {
		return 0, false
	}
	st, err := output.NewStream(dir, opts)
	require.NoError(t, err)
	defer st.Close()
	res, err := actors.Run(context.Background(), spec, actors.Options{Records: st})
	require.NoError(t, err)
	require.Nil(t, res.Records, "a streaming run keeps no records")
	res.Summary.PdemuVersion = "golden"
	res.Summary.Trace.Path = filepath.Base(res.Summary.Trace.Path)
	require.NoError(t, st.Write(res))
	require.NoError(t, st.Close())
	return st.Spilled(), true
}

// checkGolden compares a run directory with the golden outputs of name.
func checkGolden(t *testing.T, name, dir string) {
	t.Helper()
	gold := filepath.Join("testdata", "golden", strings.TrimSuffix(name, ".hcl"))
	want, err := os.ReadFile(filepath.Join(gold, "summary.json"))
	require.NoError(t, err)
	sum, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(sum), "summary.json of the streaming run")
	wantDig, err := os.ReadFile(filepath.Join(gold, "digests.txt"))
	require.NoError(t, err)
	require.Equal(t, string(wantDig), digests(t, dir), "the streaming run's files (no temporary file left)")
}

// TestStreamGolden: every embedded scenario streamed through an
// output.Stream writes the golden files, byte for byte, and nothing else.
func TestStreamGolden(t *testing.T) {
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if large[name] { // TestGolden covers them; the stream is the same code at any size
				t.Skip("a large cluster")
			}
			dir, _, ok := streamScenario(t, name, 0)
			if !ok {
				t.Skip("trace not on this machine (../shared/traces)")
			}
			checkGolden(t, name, dir)
		})
	}
}

// TestStreamSpills: with a reorder bound of a few records the stream
// spills sorted runs to disk and merges them back: the files are still
// the golden ones (a bucketed, a fused-pool, a data-parallel and the chaos
// scenario with its failures and retries).
func TestStreamSpills(t *testing.T) {
	for _, name := range []string{scenarios.Default, "buckets-3.hcl", "dp4.hcl", "chaos.hcl"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, spilled, ok := streamScenario(t, name, 4<<10)
			require.True(t, ok)
			assert.Positive(t, spilled, "a 4 KB bound spills")
			checkGolden(t, name, dir)
		})
	}
}

// tee keeps a copy of every record it passes on.
type tee struct {
	next actors.RecordSink
	recs []metrics.Record
}

func (t *tee) Record(r metrics.Record) error {
	t.recs = append(t.recs, r)
	return t.next.Record(r)
}

// TestStreamPartialRunEqualsWrite: a run stopped mid-way (by a
// cancellation, so not reproducible from run to run) streamed to disk
// writes the files output.Write writes for the same records kept in
// memory: the unfinished requests join per_request.csv in id order.
func TestStreamPartialRunEqualsWrite(t *testing.T) {
	for _, bound := range []int{0, 2 << 10} {
		spec := testkit.Scenario(t, "1p3d-tcp.hcl", topology.Options{})
		streamed := t.TempDir()
		st, err := output.NewStream(streamed, output.StreamOptions{ReorderBytes: bound})
		require.NoError(t, err)
		tr := &tee{next: st}
		ctx, cancel := context.WithCancelCause(context.Background())
		res, err := actors.Run(ctx, spec, actors.Options{Records: tr, FreshSystem: true, Progress: func(p actors.Progress) {
			if p.Ended >= 60 {
				cancel(actors.StopCause("SIGINT"))
			}
		}})
		cancel(nil)
		var pe *actors.PartialError
		require.ErrorAs(t, err, &pe)
		require.NotEmpty(t, res.Unfinished)
		require.NoError(t, st.Write(res))
		require.NoError(t, st.Close())

		mem := *res
		mem.Records = append([]metrics.Record(nil), tr.recs...)
		sort.Slice(mem.Records, func(i, j int) bool { return mem.Records[i].ID < mem.Records[j].ID })
		mem.Arrivals = nil
		inMemory := t.TempDir()
		require.NoError(t, output.Write(inMemory, &mem, output.WriteOptions{}))
		require.Equal(t, digests(t, inMemory), digests(t, streamed), "bound %d", bound)
	}
}

// TestStreamCloseLeavesNothing: a run that never gets to Write leaves no
// file behind; Write refuses a streamed result.
func TestStreamCloseLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	st, err := output.NewStream(dir, output.StreamOptions{})
	require.NoError(t, err)
	require.NoError(t, st.Record(metrics.Record{ID: 1, TPOT: -1}))
	require.NoError(t, st.Close())
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents)
	err = output.Write(dir, &actors.Result{Arrivals: metrics.NewArrivals()}, output.WriteOptions{})
	assert.ErrorContains(t, err, "streamed")
}

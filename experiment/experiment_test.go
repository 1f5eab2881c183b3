package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/workload"
)

func TestUnknownExperiment(t *testing.T) {
	_, err := Run(context.Background(), "nope", Options{})
	require.ErrorContains(t, err, "kvc-paper")
}

func TestEmbeddedFilesParse(t *testing.T) {
	for _, name := range runFiles(t) {
		spec, err := loadSpec(name, nil)
		require.NoError(t, err, name)
		for _, w := range append(append(spec.Decode, spec.Fused...), spec.Prefill...) {
			assert.Equal(t, "H100-SXM", w.GPU, "%s: %s", name, w.Name)
			if w.Kind != "prefill" {
				assert.Equal(t, 92104, w.KVBudgetTokens, "%s: %s: K_d", name, w.Name)
			}
		}
		if spec.Router.Policy == "kvc" {
			assert.Equal(t, 2, spec.Router.Epsilon, "%s: §7's ε", name)
			assert.True(t, spec.Router.NetCapacity, name)
		}
	}
}

// TestKVCPaperShort runs the experiment end to end on the reduced set
// (one seed, a fifth of the trace) and checks the direction of each effect
// the report states, not its numbers.
func TestKVCPaperShort(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end experiment")
	}
	dir := t.TempDir()
	rep, err := Run(context.Background(), "kvc-paper", Options{Short: true, OutDir: dir, Parallel: 2})
	require.NoError(t, err)
	checkDirections(t, rep)

	// Per-run outputs and the three report formats.
	_, err = os.Stat(filepath.Join(dir, "runs", "v2-tcp-s1", "per_request.csv"))
	require.NoError(t, err)
	require.NoError(t, rep.WriteDir(dir))
	txt, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(txt), "Published vs emulated")
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| figure | published | emulated |")
	var back Report
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.Equal(t, len(rep.Figures), len(back.Figures))

	// Deterministic figures whatever the parallelism.
	rep1, err := Run(context.Background(), "kvc-paper", Options{Short: true, Parallel: 1})
	require.NoError(t, err)
	var a, b bytes.Buffer
	rep.Notes, rep1.Notes = nil, nil // wall time
	require.NoError(t, rep.WriteJSON(&a))
	require.NoError(t, rep1.WriteJSON(&b))
	assert.Equal(t, a.String(), b.String())
}

// TestKVCPaperFull runs the whole experiment (about a minute on two
// cores); set PDEMU_EXPERIMENT_FULL=1.
func TestKVCPaperFull(t *testing.T) {
	if testing.Short() || os.Getenv("PDEMU_EXPERIMENT_FULL") == "" {
		t.Skip("set PDEMU_EXPERIMENT_FULL=1 to run the full kvc-paper experiment")
	}
	rep, err := Run(context.Background(), "kvc-paper", Options{})
	require.NoError(t, err)
	checkDirections(t, rep)
	var b bytes.Buffer
	require.NoError(t, rep.WriteText(&b))
	t.Log(b.String())
	// Higher pressure (Q2) costs KVC Direct share.
	assert.Less(t, rep.Run("ts10-v2-tcp").DirectShare, rep.Run("v2-tcp-s1").DirectShare)
	// v1 on many 2–8K appends loses Direct share against v2.
	assert.Less(t, rep.Run("stress-v1-tcp").DirectShare, rep.Run("stress-v2-tcp").DirectShare-0.05)
	// SGLang's smallest-tree miss rule spreads sessions better than v0's rule: fewer recomputed tokens.
	assert.Less(t, rep.Run("dp4-s1").Prefilled, rep.Run("dp4-rr").Prefilled)
}

func checkDirections(t *testing.T, rep *Report) {
	t.Helper()
	for _, r := range rep.Runs {
		assert.Zero(t, r.Failed, r.Name)
		assert.Positive(t, r.Requests, r.Name)
	}
	s := rep.Seeds[0]
	run := func(prefix string) *RunSummary {
		r := rep.Run(prefix + "-s" + itoa(s))
		require.NotNil(t, r, prefix)
		return r
	}
	kvc, kvcR, v1, dp, van := run("v2-tcp"), run("v2-rdma"), run("v1-tcp"), run("dp4"), run("vanilla-tcp")
	// KVC serves most requests Direct; P is touched by the rest only.
	assert.Greater(t, kvc.DirectShare, 0.8)
	assert.InDelta(t, 1-kvc.DirectShare, kvc.PShare, 0.001) // the summary rounds to 3 decimals
	// Pinning beats vanilla P/D at the median by far; KVC loses DP's tail (reseeds).
	assert.Less(t, kvc.TTFTp50*5, van.TTFTp50)
	assert.Greater(t, kvc.TTFTp99, dp.TTFTp99)
	// RDMA cuts the reseed tail; v1 never beats v2's Direct share.
	assert.Less(t, kvcR.TTFTp99, kvc.TTFTp99)
	assert.LessOrEqual(t, v1.DirectShare, kvc.DirectShare)
	// Transfer, not re-prefill, is what RDMA changes.
	xt, xr := rep.Figure("Reseed transfer over TCP (median)"), rep.Figure("Reseed transfer over RDMA (median)")
	require.NotNil(t, xt)
	require.NotNil(t, xr)
	assert.Less(t, xr.Value*3, xt.Value)
	if f := rep.Figure("Re-prefill RDMA / TCP"); assert.NotNil(t, f) {
		assert.InDelta(t, 1, f.Value, 0.5)
	}
	// D→P sync (Q4) removes stale context from reseeds.
	if a, b := rep.runOut("v2-tcp-s"+itoa(s)), rep.runOut("v2-tcp-dpsync"); assert.NotNil(t, a) && assert.NotNil(t, b) {
		assert.Less(t, quantile(b.st.reseedStale, 0.5), quantile(a.st.reseedStale, 0.5))
	}
	// Every figure has a verdict class; every miss an attribution computed
	// from the runs; every depends-on-fitted row names its fitted parameter;
	// the counts add up.
	n := 0
	for _, c := range rep.Verdicts {
		n += c.Figures
	}
	assert.Equal(t, len(rep.Figures), n)
	for _, f := range rep.Figures {
		assert.Contains(t, VerdictClasses, f.Verdict, f.Name)
		if f.Verdict == VerdictMiss {
			assert.NotEmpty(t, f.Attribution, f.Name)
		}
		if f.Verdict == VerdictDependsFitted {
			assert.NotEmpty(t, append(f.DependsOn, f.DecidedBy...), f.Name)
		}
		// A miss is out of tolerance, or a combination whose parts miss.
		assert.Equal(t, f.Verdict == VerdictMiss, (!f.InTolerance || len(f.PartsMissed) > 0) && f.Verdict != VerdictConsistency, f.Name)
	}
	// Every Seed, Reseed and Fallback of every run names its kv_cause.
	for name, o := range rep.outs {
		for k, c := range o.st.attr.prefill {
			p := strings.SplitN(k, "|", 3)
			if p[1] == "Seed" || p[1] == "Reseed" || p[1] == "Fallback" {
				assert.NotEmpty(t, p[2], "%s: %d %s requests without a kv_cause", name, c.N, p[1])
			}
		}
	}
	var det bool
	for _, sec := range rep.Sections {
		if sec.Title == "Q5: run-to-run spread" {
			det = bytes.Contains([]byte(sec.Text[0]), []byte("identical"))
		}
	}
	assert.True(t, det, "the rerun is identical")
}

func itoa(x uint64) string {
	b, _ := json.Marshal(x)
	return string(b)
}

// TestHCLWorkloadIsTheExperiments: `pdemu run` on an experiment file on
// disk (its extends resolved on disk) replays exactly the workload the
// experiment gives that run, with the client cap of 32.
func TestHCLWorkloadIsTheExperiments(t *testing.T) {
	spec := loadDisk(t, "kvc-tcp", map[string]string{"seed": "3"})
	src, err := actors.Source(spec, false)
	require.NoError(t, err)
	c, ok := src.(workload.ClientCapper)
	require.True(t, ok)
	assert.Equal(t, 32, c.ClientCap())
	exp, err := sweSource(nil, false)(3)
	require.NoError(t, err)
	n := 0
	for {
		a, errA := src.Next()
		b, errB := exp.Next()
		require.Equal(t, errB, errA)
		if errA != nil {
			break
		}
		require.Equal(t, b, a)
		n++
	}
	assert.Equal(t, 4449, n)
}

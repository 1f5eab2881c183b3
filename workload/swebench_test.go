package workload

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSWEBenchTargets(t *testing.T) {
	g, err := NewSWEBench(SWEBenchConfig{}, 1)
	require.NoError(t, err)
	st, err := ComputeStats(g)
	require.NoError(t, err)
	var b strings.Builder
	st.Write(&b)
	t.Logf("swebench defaults, seed 1:\n%s", b.String())
	require.Equal(t, 4449, st.Requests)
	require.Equal(t, 52, st.Sessions)
	require.InDelta(t, 2.53, st.TurnGap.P50.Seconds(), 0.1*2.53, "p50 gap between turns")
	require.InDelta(t, 5.44, st.Duration.Hours(), 0.2*5.44, "trace time")
	require.Equal(t, 24, st.BlockTokens)
	require.Greater(t, st.Append.P50, 100)
	require.Less(t, st.Append.P50, 500, "median append a few hundred tokens")
	require.Greater(t, st.LargeAppends, 0, "a tail beyond 8192")
	require.Greater(t, st.IdealReuse, 0.9)
	require.LessOrEqual(t, st.Input.Max, 65536)
	require.Zero(t, st.MisplacedBlocks)
	// Across seeds the targets hold too.
	for seed := uint64(2); seed < 6; seed++ {
		g, err := NewSWEBench(SWEBenchConfig{}, seed)
		require.NoError(t, err)
		st, err := ComputeStats(g)
		require.NoError(t, err)
		require.Equal(t, 4449, st.Requests)
		require.Equal(t, 52, st.Sessions)
		require.InDelta(t, 2.53, st.TurnGap.P50.Seconds(), 0.1*2.53, "seed %d", seed)
	}
}

func TestSWEBenchDeterministicAndConcurrency(t *testing.T) {
	gen := func(cfg SWEBenchConfig, seed uint64) []byte {
		g, err := NewSWEBench(cfg, seed)
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, WriteJSONL(&b, g))
		return b.Bytes()
	}
	small := SWEBenchConfig{Sessions: 8, Requests: 400}
	require.Equal(t, gen(small, 3), gen(small, 3))
	require.NotEqual(t, gen(small, 3), gen(small, 4))

	// With Concurrency C, at most C sessions overlap in the open-loop timeline.
	cfg := SWEBenchConfig{Sessions: 20, Requests: 1000, Concurrency: 4}
	g, err := NewSWEBench(cfg, 9)
	require.NoError(t, err)
	reqs := drain(t, g)
	first, last := map[int32]time.Duration{}, map[int32]time.Duration{}
	for _, r := range reqs {
		if r.Turn == 0 {
			first[r.Session] = r.Arrival
		}
		last[r.Session] = r.Arrival
	}
	for s := range first {
		active := 0
		for o := range first {
			if first[o] <= first[s] && last[o] > first[s] {
				active++
			}
		}
		require.LessOrEqual(t, active, 4, "session %d starts with %d active", s, active)
	}
	require.Zero(t, first[3])
	require.Greater(t, first[4], time.Duration(0))
}

func TestSWEBenchConfigErrors(t *testing.T) {
	for _, cfg := range []SWEBenchConfig{
		{Sessions: 10, Requests: 5},
		{Sessions: -1},
		{GapSigma: -1},
		{LargeAppendMin: 10, LargeAppendMax: 5},
		{MaxContext: 100},
		{LargeAppendProb: 2},
	} {
		_, err := NewSWEBench(cfg, 1)
		require.Error(t, err, "%+v", cfg)
	}
}

// The generator's JSONL export replays through the Mooncake loader as the
// same requests.
func TestWriteJSONLRoundTrip(t *testing.T) {
	g, err := NewSWEBench(SWEBenchConfig{Sessions: 6, Requests: 300}, 5)
	require.NoError(t, err)
	want := drain(t, g)
	g, err = NewSWEBench(SWEBenchConfig{Sessions: 6, Requests: 300}, 5)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, WriteJSONL(&b, g))
	require.Equal(t, 300, bytes.Count(b.Bytes(), []byte("\n")))
	got := drain(t, openReader(t, b.String(), "", LoadOptions{}))
	require.Equal(t, want, got)

	// Other sources round-trip too (Agentic, via the lead's generator).
	a, err := NewAgentic(agenticSmall(), 2, 0)
	require.NoError(t, err)
	want = drain(t, a)
	a, err = NewAgentic(agenticSmall(), 2, 0)
	require.NoError(t, err)
	b.Reset()
	require.NoError(t, WriteJSONL(&b, a))
	got = drain(t, openReader(t, b.String(), FormatMooncake, LoadOptions{}))
	require.Equal(t, want, got)
}

func TestSWEBenchContentModels(t *testing.T) {
	count := func(content string) (mid, large int, out float64) {
		g, err := NewSWEBench(SWEBenchConfig{Content: content}, 1)
		require.NoError(t, err)
		n := 0
		for _, r := range drain(t, g) {
			out += float64(r.OutputLen)
			n++
			if r.Turn == 0 {
				continue
			}
			switch {
			case r.AppendLen > 8192:
				large++
			case r.AppendLen > 2048:
				mid++
			}
		}
		return mid, large, out / float64(n)
	}
	midV0, _, outV0 := count(SWEBenchV0)
	mid, large, out := count(SWEBenchPaper)
	midStress, _, _ := count(SWEBenchV1Stress)
	require.InDelta(t, 225, out, 20, "paper outputs: mean ≈ 225 tokens (1.00 M / 4,449)")
	require.Less(t, outV0, 130.0)
	require.Greater(t, mid, midV0, "the paper model has a 2–8K tail")
	require.Greater(t, large, 40)
	require.Greater(t, midStress, 3*mid, "v1-stress has many 2–8K appends")
	_, err := NewSWEBench(SWEBenchConfig{Content: "nope"}, 1)
	require.ErrorContains(t, err, "content")
}

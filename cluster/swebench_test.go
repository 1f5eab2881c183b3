package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// TestSWEBenchConfigDefaults: an unset generator "swebench" gives exactly
// workload.SWEBenchDefaults for each content model, the topology copies of
// the defaults agree with the workload's, and every set attribute, zero
// included, reaches the generator.
func TestSWEBenchConfigDefaults(t *testing.T) {
	for _, content := range workload.SWEBenchContents() {
		g := topology.Generator{Kind: "swebench", Sessions: 52, Requests: 4449, BlockTokens: 24, Content: content}
		want := workload.SWEBenchDefaults(workload.SWEBenchConfig{Sessions: 52, Requests: 4449, BlockTokens: 24, Content: content})
		got := swebenchConfig(g)
		require.True(t, got.Exact)
		got.Exact = false
		require.Equal(t, want, got, content)
	}
	d := workload.SWEBenchDefaults(workload.SWEBenchConfig{})
	require.Equal(t, topology.SWEBenchMidAppendProb, d.MidAppendProb)
	require.Equal(t, topology.SWEBenchMidAppendMin, d.MidAppendMin)
	require.Equal(t, topology.SWEBenchMidAppendMax, d.MidAppendMax)
	require.Equal(t, topology.SWEBenchLargeAppendProb, d.LargeAppendProb)
	require.Equal(t, topology.SWEBenchLargeAppendMin, d.LargeAppendMin)
	require.Equal(t, topology.SWEBenchLargeAppendMax, d.LargeAppendMax)
	require.Equal(t, topology.SWEBenchSystemTokens, d.SystemTokens)
	require.Equal(t, topology.SWEBenchCondensedTokens, d.CondensedTokens)
	require.Equal(t, topology.SWEBenchMaxContext, d.MaxContext)
	require.Equal(t, topology.SWEBenchV1StressMidAppendProb,
		workload.SWEBenchDefaults(workload.SWEBenchConfig{Content: workload.SWEBenchV1Stress}).MidAppendProb)

	zero, large := 0.0, 0.005
	g := topology.Generator{Kind: "swebench", Sessions: 52, Requests: 4449, BlockTokens: 24, Content: "paper",
		SWEBench: topology.SWEBenchParams{MidAppendProb: &zero, LargeAppendProb: &large}}
	c := swebenchConfig(g)
	require.Equal(t, 0.0, c.MidAppendProb, "an explicit zero is not the default")
	require.Equal(t, 0.005, c.LargeAppendProb)
	_, err := workload.NewSWEBench(c, 1)
	require.NoError(t, err)
}

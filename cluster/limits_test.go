package cluster_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/cluster/clustertest"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// A request longer than the model's context fails at once with its own
// reason, on a P/D cluster and on a fused pool; with the context extended
// (max_model_len, as a YaRN deployment states it) the same request is
// served, and one larger than every pool still fails exceeds-kv-pool.
func TestExceedsContext(t *testing.T) {
	for _, name := range []string{"1p3d-mlx5", "dp4"} {
		src, err := scenarios.Read(name + ".hcl")
		require.NoError(t, err)
		for _, tc := range []struct {
			set  []string
			want []string // reasons of the 300K, 8K and 2M-token requests
		}{
			{nil, []string{gpu.ReasonExceedsContext, "", gpu.ReasonExceedsContext}},
			{[]string{"*.*.max_model_len=4000000", "*.*.kv_budget_tokens=0"}, []string{"", "", gpu.ReasonExceedsPool}},
		} {
			spec, err := topology.Parse("<embedded>/"+name+".hcl", src, topology.Options{Set: tc.set})
			require.NoError(t, err)
			lim, err := cluster.LimitsOf(spec)
			require.NoError(t, err)
			if tc.set == nil {
				assert.Equal(t, 262_144, lim.Context, name)
			} else {
				assert.Equal(t, 4_000_000, lim.Context, name)
				assert.Greater(t, lim.Pool, 500_000, "%s: pool derived from H200 memory", name)
			}
			r0, r1, r2 := req(0, 0, 300_000), req(1, 1, 8000), req(2, 2, 2_000_000)
			net, err := clustertest.New(spec, &source{reqs: []*workload.Request{r0, r1, r2}})
			require.NoError(t, err)
			require.NoError(t, net.Run())
			recs := net.Cluster.Collector().Records()
			require.Len(t, recs, 3)
			for i, want := range tc.want {
				if want == "" {
					assert.False(t, recs[i].Failed, "%s %v: request %d: %s", name, tc.set, i, recs[i].Reason)
					continue
				}
				assert.True(t, recs[i].Failed, "%s %v: request %d", name, tc.set, i)
				assert.Equal(t, want, recs[i].Reason, "%s %v: request %d", name, tc.set, i)
			}
		}
	}
}

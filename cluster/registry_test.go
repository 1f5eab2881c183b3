package cluster_test

import (
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/policy/bucket"
	"github.com/pdemu/pdemu/topology"
)

// TestRegistryMatchesHCL: the names the HCL accepts and the constructors
// the cluster runs are the same sets, and every constructor builds with
// its policy's default parameters.
func TestRegistryMatchesHCL(t *testing.T) {
	pd, local, global := cluster.PolicyNames(cluster.TierPD), cluster.PolicyNames(cluster.TierLocal), cluster.PolicyNames(cluster.TierGlobal)
	// A router block takes a P/D policy or, over one pool of fused
	// workers, a local policy (kvc names the P/D KVC-Router there).
	router := slices.Clone(pd)
	for _, l := range local {
		if !slices.Contains(pd, l) {
			router = append(router, l)
		}
	}
	sort.Strings(router)
	assert.Equal(t, topology.Policies(), router, "router block policies")
	assert.Equal(t, topology.LocalPolicies(), local, "local_router policies")
	assert.Equal(t, topology.GlobalPolicies(), global, "global_router policies")
	assert.Equal(t, bucket.LocalPolicies(), local)
	assert.Equal(t, bucket.GlobalPolicies(), global)
	// A name in two tiers is a collision unless topology declares it
	// shared (a P/D policy named least_loaded would take over the router
	// block label of the fused least_loaded).
	var both []string
	for _, n := range pd {
		if slices.Contains(local, n) || slices.Contains(global, n) {
			both = append(both, n)
		}
	}
	for _, n := range local {
		if slices.Contains(global, n) {
			both = append(both, n)
		}
	}
	shared := topology.SharedPolicyNames()
	for _, n := range both {
		assert.NotEmpty(t, shared[n], "policy %q is registered in two tiers without being declared shared", n)
	}
	assert.Len(t, both, len(shared), "every declared shared name is in two tiers")

	buckets := []bucket.BucketConfig{{Name: "a", Range: bucket.Range{Min: 0, Max: 100}, Instances: 2}}
	for k, c := range cluster.Registry {
		n := 0
		for _, set := range []bool{c.PD != nil, c.Local != nil, c.Global != nil} {
			if set {
				n++
			}
		}
		require.Equal(t, 1, n, "%v: exactly one constructor", k)
		switch k.Tier {
		case cluster.TierPD:
			require.NotNil(t, c.PD, k.Name)
			p, err := c.PD(topology.DefaultRouter(k.Name), 1, 2)
			require.NoError(t, err, k.Name)
			require.NotNil(t, p, k.Name)
		case cluster.TierLocal:
			require.NotNil(t, c.Local, k.Name)
			l := topology.DefaultLocalRouter(k.Name)
			p, err := c.Local(bucket.LocalConfig{Policy: l.Policy, MetaStoreTTL: l.MetaStoreTTL, ProbeLatency: l.ProbeLatency,
				ProbeTopK: l.ProbeTopK, LoadAlpha: l.LoadAlpha, ScoreAlpha: l.ScoreAlpha, ScoreBeta: l.ScoreBeta,
				PrefixK: l.PrefixK, FanOut: l.FanOut, OverloadFactor: l.OverloadFactor, KVC: bucket.KVCConfig{Alpha: l.Alpha},
				CacheThreshold: &l.CacheThreshold, BalanceAbs: &l.BalanceAbs, BalanceRel: &l.BalanceRel}, 2)
			require.NoError(t, err, k.Name)
			assert.Equal(t, k.Name, p.Name())
		case cluster.TierGlobal:
			require.NotNil(t, c.Global, k.Name)
			g := topology.DefaultGlobalRouter(k.Name)
			_, err := c.Global(bucket.GlobalConfig{Policy: g.Policy, LengthPenaltyWeight: g.LengthPenaltyWeight,
				LoadWeight: g.LoadWeight, CacheWeight: g.CacheWeight}, buckets)
			require.NoError(t, err, k.Name)
		default:
			t.Fatalf("%v: unknown tier", k)
		}
	}
}

package cluster_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/cluster/clustertest"
	"github.com/pdemu/pdemu/topology"
)

// benchRun runs spec through the in-memory network b.N times.
func benchRun(b *testing.B, spec *topology.Spec) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		src, err := cluster.Source(spec, false)
		require.NoError(b, err)
		net, err := clustertest.New(spec, src)
		require.NoError(b, err)
		require.NoError(b, net.Run())
	}
}

// BenchmarkDefaultInMemory: the default scenario without faults (the
// fault machinery must cost it nothing: its hooks are nil checks).
func BenchmarkDefaultInMemory(b *testing.B) {
	t := &testing.T{}
	benchRun(b, embedded(t, "1p3d-mlx5.hcl"))
}

// BenchmarkChaosInMemory: the chaos scenario.
func BenchmarkChaosInMemory(b *testing.B) {
	t := &testing.T{}
	benchRun(b, embedded(t, "chaos.hcl"))
}

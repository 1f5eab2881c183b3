package actors

import (
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"
	cmap "github.com/orcaman/concurrent-map"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fresh system's registry is built with one shard per map, and finds
// every PID it holds.
func TestRegistryOneShard(t *testing.T) {
	require.Equal(t, 1, cmap.SHARD_COUNT)
	ps := borrowSystem(hclog.NewNullLogger(), true)
	for _, m := range ps.sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		require.Len(t, m, 1)
	}
	m := ps.sys.ProcessRegistry.LocalPIDs.GetBucket("x")
	for i := range 100 {
		m.Set(fmt.Sprint(i), i)
	}
	assert.Equal(t, 100, m.Count())
	for i := range 100 {
		v, ok := m.Get(fmt.Sprint(i))
		assert.True(t, ok)
		assert.Equal(t, i, v)
	}
}

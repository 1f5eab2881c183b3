package actors

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/reservoir"
	"github.com/pdemu/pdemu/metrics"
)

// The wall clock keeps at most reservoir.Cap lateness samples (a server's
// runs for ever), and its summary still counts every delivery and gives
// the exact maximum.
func TestWallClockLatenessBounded(t *testing.T) {
	c := &WallClock{scale: 2}
	n := 3 * reservoir.Cap
	for i := range n {
		c.late.Add(time.Duration(i) * time.Microsecond)
	}
	l := c.Lateness()
	assert.Len(t, l, reservoir.Cap)
	assert.True(t, slices.IsSorted(l))
	// A uniform sample: its median near the median of all.
	assert.InDelta(t, float64(n/2), float64(l[len(l)/2]/time.Microsecond), 0.02*float64(n))
	var clk metrics.Clock
	c.Judge(&clk, 1000)
	require.NotNil(t, clk.Lateness)
	require.NotNil(t, clk.EmulatedLateness)
	assert.Equal(t, n, clk.Lateness.Samples)
	assert.InDelta(t, float64(n-1)/1e3, clk.Lateness.Max, 1e-9, "ms, exact")
	assert.Equal(t, n, clk.EmulatedLateness.Samples)
	assert.InDelta(t, 2*float64(n-1)/1e3, clk.EmulatedLateness.Max, 1e-9, "ms at scale 2")
}

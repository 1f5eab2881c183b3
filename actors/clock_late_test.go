package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The wall clock keeps at most lateCap lateness samples (a server's runs
// for ever), counting every delivery and the maximum exactly.
func TestWallClockLatenessBounded(t *testing.T) {
	c := &WallClock{}
	n := 3 * lateCap
	for i := range n {
		c.lateSample(time.Duration(i) * time.Microsecond)
	}
	assert.Len(t, c.late, lateCap)
	assert.Equal(t, n, c.lateN)
	assert.Equal(t, time.Duration(n-1)*time.Microsecond, c.lateMax)
	// A uniform sample: its median near the median of all.
	l := c.Lateness()
	assert.InDelta(t, float64(n/2), float64(l[len(l)/2]/time.Microsecond), 0.02*float64(n))
}

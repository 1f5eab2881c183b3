package reservoir

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestBounded: beyond Cap values the sample stays at Cap while the count
// and the maximum stay exact, and it is uniform (its median near the
// median of all).
func TestBounded(t *testing.T) {
	var r Sample
	n := 3 * Cap
	for i := range n {
		r.Add(time.Duration(i) * time.Microsecond)
	}
	assert.Len(t, r.s, Cap)
	assert.Equal(t, n, r.N())
	assert.Equal(t, time.Duration(n-1)*time.Microsecond, r.Max())
	l := r.Sorted()
	assert.InDelta(t, float64(n/2), float64(l[len(l)/2]/time.Microsecond), 0.02*float64(n))
}

// TestQuantiles: nearest-rank quantiles of an exact (unsampled) Sample,
// and zeros for an empty one.
func TestQuantiles(t *testing.T) {
	var r Sample
	qs, mx, n := r.Quantiles(0.5, 0.99)
	assert.Equal(t, []time.Duration{0, 0}, qs)
	assert.Zero(t, mx)
	assert.Zero(t, n)
	for _, d := range []time.Duration{5, 1, 4, 2, 3} {
		r.Add(d)
	}
	qs, mx, n = r.Quantiles(0, 0.5, 0.99)
	assert.Equal(t, []time.Duration{1, 3, 5}, qs)
	assert.Equal(t, time.Duration(5), mx)
	assert.Equal(t, 5, n)
	assert.Equal(t, []time.Duration{1, 2, 3, 4, 5}, r.Sorted())
}

// TestDeterministic: the same values in the same order give the same
// sample.
func TestDeterministic(t *testing.T) {
	var a, b Sample
	for i := range Cap + 1000 {
		d := time.Duration(i*7919%10007) * time.Microsecond
		a.Add(d)
		b.Add(d)
	}
	assert.Equal(t, a.Sorted(), b.Sorted())
}

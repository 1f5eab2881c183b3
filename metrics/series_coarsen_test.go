package metrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

// A series with a point bound keeps at most about that many points, its
// grid a power-of-two multiple of the first, and at every multiple of
// its final grid and for Max it reads what the full series reads.
func TestSeriesCoarsenBounded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := time.Duration(rapid.IntRange(1, 1000).Draw(t, "grid")) * time.Millisecond
		maxPts := rapid.IntRange(2, 64).Draw(t, "max")
		full, bounded := NewSeries("w", "decode"), NewSeries("w", "decode")
		bounded.SetGrid(base)
		bounded.SetMaxPoints(maxPts)
		now := time.Duration(0)
		for range rapid.IntRange(0, 3000).Draw(t, "n") {
			now += time.Duration(rapid.IntRange(0, int(3*base)).Draw(t, "dt"))
			kv := rapid.IntRange(0, 50).Draw(t, "kv")
			full.Observe(now, kv, kv%3, kv%5)
			bounded.Observe(now, kv, kv%3, kv%5)
			if bounded.Points() > maxPts {
				t.Fatalf("%d points > %d", bounded.Points(), maxPts)
			}
		}
		g := bounded.Grid()
		if g%base != 0 || (g/base)&(g/base-1) != 0 {
			t.Fatalf("grid %v is not a power-of-two multiple of %v", g, base)
		}
		for k := time.Duration(0); k*g <= now+g; k++ {
			assert.Equal(t, full.At(k*g), bounded.At(k*g), "at %v", k*g)
		}
		assert.Equal(t, full.Max(), bounded.Max())
	})
}

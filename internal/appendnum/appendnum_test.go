package appendnum

import (
	"math"
	"strconv"
	"testing"
)

// TestInt: every value in [-1000, 1000] and the extremes, after a prefix
// that must be kept, as strconv.AppendInt writes them.
func TestInt(t *testing.T) {
	check := func(n int64) {
		if got, want := string(Int([]byte("x"), n)), "x"+strconv.FormatInt(n, 10); got != want {
			t.Fatalf("Int(%d) = %q, want %q", n, got, want)
		}
	}
	for n := int64(-1000); n <= 1000; n++ {
		check(n)
	}
	for _, n := range []int64{math.MinInt64, math.MinInt64 + 1, math.MaxInt64, -1 << 40, 1 << 40} {
		check(n)
	}
}

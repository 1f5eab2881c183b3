package metrics

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestSortDurationsMatchesSlicesSort: any durations, negative, equal or
// sharing digits, short or long, come out as slices.Sort leaves them.
func TestSortDurationsMatchesSlicesSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var gen *rapid.Generator[int64]
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			gen = rapid.Int64()
		case 1:
			gen = rapid.Int64Range(0, 5e12) // ns durations: high digits shared
		case 2:
			gen = rapid.Int64Range(-3, 3)
		default:
			gen = rapid.Int64Range(-1, 1<<20)
		}
		raw := rapid.SliceOfN(gen, 0, 3*radixMin).Draw(t, "s")
		s := make([]time.Duration, len(raw))
		for i, v := range raw {
			s[i] = time.Duration(v)
		}
		want := slices.Clone(s)
		slices.Sort(want)
		sortDurations(s)
		require.Equal(t, want, s)
	})
}

// BenchmarkSortDurations: 4,000 TTFT-like durations (a Mooncake run's)
// and 1M (the 1M-request run's, which sortDurations leaves to pdqsort:
// radixMax).
func BenchmarkSortDurations(b *testing.B) {
	for _, n := range []int{4000, 1 << 20} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchSort(b, n) })
	}
}

func benchSort(b *testing.B, n int) {
	src := make([]time.Duration, n)
	x := uint64(1)
	for i := range src {
		x = x*6364136223846793005 + 1442695040888963407
		src[i] = time.Duration(x>>24) % (2400 * time.Second)
	}
	s := make([]time.Duration, len(src))
	for _, c := range []struct {
		name string
		sort func([]time.Duration)
	}{{"slices", slices.Sort[[]time.Duration]}, {"radix", sortDurations}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				copy(s, src)
				c.sort(s)
			}
		})
	}
}

package hashrun

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func prefixRef(a, b []uint64) int {
	i := 0
	for i < min(len(a), len(b)) && a[i] == b[i] {
		i++
	}
	return i
}

func suffixRef(a, b []uint64) int {
	i := 0
	for i < min(len(a), len(b)) && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// TestPrefix and TestSuffix check the chunked comparisons against the
// element-by-element definitions, on lengths around the chunk size and
// with at most one differing hash (a small alphabet makes equal runs
// common).
func TestPrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.SliceOfN(rapid.Uint64Range(0, 2), 0, 100).Draw(t, "a")
		b := append([]uint64(nil), a[:rapid.IntRange(0, len(a)).Draw(t, "cut")]...)
		b = append(b, rapid.SliceOfN(rapid.Uint64Range(0, 2), 0, 5).Draw(t, "tail")...)
		if len(b) > 0 && rapid.Bool().Draw(t, "flip") {
			b[rapid.IntRange(0, len(b)-1).Draw(t, "at")]++
		}
		require.Equal(t, prefixRef(a, b), Prefix(a, b))
	})
}

func TestSuffix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.SliceOfN(rapid.Uint64Range(0, 2), 0, 100).Draw(t, "a")
		b := append([]uint64(nil), a[rapid.IntRange(0, len(a)).Draw(t, "cut"):]...)
		b = append(rapid.SliceOfN(rapid.Uint64Range(0, 2), 0, 5).Draw(t, "head"), b...)
		if len(b) > 0 && rapid.Bool().Draw(t, "flip") {
			b[rapid.IntRange(0, len(b)-1).Draw(t, "at")]++
		}
		require.Equal(t, suffixRef(a, b), Suffix(a, b))
	})
}

// TestLongRuns: every length and difference position around the chunk
// boundaries of 1,000-hash runs, and a b cut short.
func TestLongRuns(t *testing.T) {
	base := make([]uint64, 1000)
	for i := range base {
		base[i] = uint64(i) * 7
	}
	for _, n := range []int{0, 1, 3, 4, 5, 31, 32, 33, 255, 256, 257, 511, 512, 513, 1000} {
		for _, diff := range []int{-1, 0, 1, 3, 4, 31, 32, 33, 254, 255, 256, 257, 511, 512, 513, 700, 999} {
			a, b := base[:n], slices.Clone(base[:n])
			if diff >= 0 && diff < n {
				b[diff]++
			}
			require.Equal(t, prefixRef(a, b), Prefix(a, b), "prefix n=%d diff=%d", n, diff)
			require.Equal(t, suffixRef(a, b), Suffix(a, b), "suffix n=%d diff=%d", n, diff)
			c := b[:min(n, 300)]
			require.Equal(t, prefixRef(a, c), Prefix(a, c), "prefix n=%d diff=%d cut", n, diff)
			require.Equal(t, suffixRef(a, b[min(n, 300):]), Suffix(a, b[min(n, 300):]), "suffix n=%d diff=%d cut", n, diff)
		}
	}
}

func BenchmarkPrefix(b *testing.B) {
	x := make([]uint64, 4096)
	for i := range x {
		x[i] = uint64(i)
	}
	y := slices.Clone(x)
	y[4000]++
	b.ReportAllocs()
	for b.Loop() {
		Prefix(x, y)
	}
}

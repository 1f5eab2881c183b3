package metrics

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestBinsSparse: bins equals a dense per-second array (each visits every
// second up to the last, in order) while allocating one chunk per
// distinct binChunk seconds counted, whatever the span.
func TestBinsSparse(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var b bins[int]
		dense := map[int64]int{}
		chunks := map[int64]bool{}
		last := int64(-1)
		for _, i := range rapid.SliceOf(rapid.Int64Range(0, 100*365*24*3600)).Draw(rt, "seconds") {
			*b.at(i)++
			dense[i]++
			chunks[i/binChunk] = true
			last = max(last, i)
		}
		require.Equal(rt, last, b.last())
		require.Len(rt, b.chunks, len(chunks))
		c := b.clone()
		*c.at(0) += 100 // a clone is deep
		prev := int64(-1)
		b.each(func(i int64, v *int) {
			require.Greater(rt, i, prev)
			require.LessOrEqual(rt, i, last)
			require.Equal(rt, dense[i], *v, "second %d", i)
			prev = i
		})
	})
}

// TestRouterWindowsFarApart: two arrivals 95 years apart and a router
// event between them (a 3e9-second span) cost two chunks each, and the
// windows still run from 0 to the last arrival.
func TestRouterWindowsFarApart(t *testing.T) {
	far := 95 * 365 * 24 * time.Hour
	a := NewArrivals()
	a.Add(&Record{Arrival: 0, Mode: "Direct", State: StateCompleted})
	a.Add(&Record{Arrival: far, Mode: "Seed", State: StateCompleted})
	require.Len(t, a.bins.chunks, 2)
	var r RouterRecorder // the zero value is usable
	r.Event(far/2, RouterMigration)
	require.Len(t, r.bins.chunks, 1)
	var out bytes.Buffer
	w := RouterWindow(far)
	require.NoError(t, WriteRouterWindowsOf(&out, a, &r, w))
	lines := bytes.Count(out.Bytes(), []byte("\n"))
	require.Equal(t, int(far/w)+2, lines, "header + one row per window up to the last arrival")
	require.LessOrEqual(t, lines, MaxRouterWindows+1)
}

// A bounded bins keeps at most its chunks, and summed over windows of a
// multiple of its resolution it reads what the unbounded one reads.
func TestBinsBounded(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var full, b bins[int]
		maxChunks := rapid.IntRange(2, 8).Draw(rt, "max")
		b.bound(maxChunks, func(dst, src *int) { *dst += *src })
		for _, i := range rapid.SliceOf(rapid.Int64Range(0, 200_000)).Draw(rt, "seconds") {
			*full.at(i)++
			*b.at(i)++
			require.LessOrEqual(rt, len(b.chunks), maxChunks)
		}
		require.Equal(rt, full.last(), b.last())
		w := b.resolution() * int64(rapid.IntRange(1, 3).Draw(rt, "k"))
		sum := func(x *bins[int]) map[int64]int {
			m := map[int64]int{}
			x.each(func(i int64, v *int) {
				if *v != 0 {
					m[i/w] += *v
				}
			})
			return m
		}
		require.Equal(rt, sum(&full), sum(&b))
	})
}

package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// peakHeap streams src and returns the largest HeapInuse seen after a GC at
// ten evenly spaced points.
func peakHeap(t *testing.T, src Source, n int) uint64 {
	t.Helper()
	var peak uint64
	var ms runtime.MemStats
	every := max(1, n/10)
	got := 0
	for {
		_, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if got%every == every-1 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
		got++
	}
	require.Equal(t, n, got)
	return peak
}

// Streaming the SWE-Bench generator takes memory proportional to the active
// sessions, not to the number of requests.
func TestMemoryFlatSWEBench(t *testing.T) {
	gen := func(n int) Source {
		// Sessions grow with n, concurrency does not.
		g, err := NewSWEBench(SWEBenchConfig{Sessions: n / 85, Requests: n, Concurrency: 16, BlockTokens: 64}, 1)
		require.NoError(t, err)
		return g
	}
	small := peakHeap(t, gen(10_000), 10_000)
	if testing.Short() || raceEnabled {
		t.Skipf("1M-request part skipped under -short/-race (10k: %d KiB in use)", small>>10)
	}
	big := peakHeap(t, gen(1_000_000), 1_000_000)
	t.Logf("heap in use: 10k requests %d KiB, 1M requests %d KiB", small>>10, big>>10)
	require.Less(t, big, 2*small+8<<20, "memory must not grow with the request count")
}

// lazyReader produces Mooncake lines on the fly, so the input itself takes
// no memory.
type lazyReader struct {
	i, n int
	buf  bytes.Buffer
}

func (l *lazyReader) Read(p []byte) (int, error) {
	for l.buf.Len() < len(p) && l.i < l.n {
		fmt.Fprintf(&l.buf, `{"timestamp": %d, "input_length": %d, "output_length": 7, "hash_ids": [%d, %d, %d]}`+"\n",
			l.i, 1500, l.i%8, 1000+l.i, 2000+l.i)
		l.i++
	}
	if l.buf.Len() == 0 {
		return 0, io.EOF
	}
	return l.buf.Read(p)
}

// The streaming loaders hold no per-request state either.
func TestMemoryFlatMooncakeLoader(t *testing.T) {
	load := func(n int) Source {
		src, err := NewMooncake(&lazyReader{n: n}, "lazy", LoadOptions{ReorderWindow: 1000})
		require.NoError(t, err)
		return src
	}
	small := peakHeap(t, load(10_000), 10_000)
	if testing.Short() || raceEnabled {
		t.Skip("200k-request part skipped under -short/-race")
	}
	big := peakHeap(t, load(200_000), 200_000)
	t.Logf("heap in use: 10k records %d KiB, 200k records %d KiB", small>>10, big>>10)
	require.Less(t, big, 2*small+4<<20)
}

package policy

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkIndexShared measures the resident index with blocks shared by
// a few workers of a large cluster (sessions that moved, or were seeded on
// several workers): every session's 256 blocks are recorded on two
// workers, so all of them live in ext records. heap-B/block is the heap
// the populated index holds per recorded block (its own copies of the
// owner lists included); the loop records every session on a third
// worker and removes it again (ext records gaining and losing a holder),
// reported as blocks/s.
func BenchmarkIndexShared(b *testing.B) {
	const sessions, blocks = 512, 256
	for _, n := range []int{8, 192, 1024} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			lists := make([][]uint64, sessions)
			for s := range lists {
				lists[s] = chainBlocks(int32(s), blocks)
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			x := NewResidentIndex(n)
			for s, l := range lists {
				x.Set(s%n, int32(s), l)
				x.Set((s+1)%n, int32(s), l)
			}
			runtime.GC()
			runtime.ReadMemStats(&m1)
			if x.Blocks() != sessions*blocks {
				b.Fatalf("%d blocks recorded, want %d", x.Blocks(), sessions*blocks)
			}
			heap := float64(m1.HeapAlloc-m0.HeapAlloc) / float64(x.Blocks())
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s := i % sessions
				x.Set((s+2)%n, int32(s), lists[s])
				x.Remove((s+2)%n, int32(s))
				i++
			}
			b.ReportMetric(float64(b.N)*2*blocks/b.Elapsed().Seconds(), "blocks/s")
			b.ReportMetric(heap, "heap-B/block") // after b.Loop, which resets metrics
			runtime.KeepAlive(x)
		})
	}
}

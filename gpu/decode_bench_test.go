package gpu

import (
	"fmt"
	"testing"
	"time"

	"github.com/pdemu/pdemu/workload"
)

// BenchmarkDecodeAdvance: the decode worker's cost per Advance (and the
// Ready after it, as the decode node calls them) with a running batch of
// n requests mid-decode, on the Qwen3-Coder/H200 cost model: what a
// decode-only stretch costs per message the worker gets.
func BenchmarkDecodeAdvance(b *testing.B) {
	p := mustPerf(b, "qwen3-coder-30b-a3b", "H200-SXM", 1)
	for _, n := range []int{8, 64, 256} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			w, err := NewDecodeWorker(DecodeConfig{Name: "d", Budget: 1 << 30, Rho: 1, MaxRunning: n}, p)
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				r := &workload.Request{ID: int64(i), Session: int32(i), InputLen: 1000 + 37*i, OutputLen: 1 << 20, BlockTokens: 16}
				j := &Job{Req: r}
				w.Run(0, j)
			}
			w.Advance(time.Minute) // their append-prefills
			w.Ready()
			if w.Running() != n || w.Queued() != 0 {
				b.Fatalf("%d running, want %d", w.Running(), n)
			}
			now := time.Minute
			b.ReportAllocs()
			for b.Loop() {
				now += 3 * time.Millisecond // a message every 3 ms, mid-step
				w.Advance(now)
				w.Ready()
			}
		})
	}
}

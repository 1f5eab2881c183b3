package transfer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pdemu/pdemu/transfer"
)

// BenchmarkNICStartAdvance keeps k transfers in flight on one 200 Gb/s RDMA
// NIC: one op is one transfer's whole life (its Start plus its share of
// the NextEvent/Advance calls that join it to the pool and complete it),
// so ns/op is the cost per transfer at that concurrency. "capped" puts a
// rate cap on every third transfer to exercise water-filling.
func BenchmarkNICStartAdvance(b *testing.B) {
	for _, capped := range []bool{false, true} {
		for _, k := range []int{1, 8, 64} {
			name := fmt.Sprintf("concurrent=%d", k)
			if capped {
				name = fmt.Sprintf("capped/concurrent=%d", k)
			}
			b.Run(name, func(b *testing.B) {
				n, err := transfer.NewNIC(transfer.Config{Name: "p0/mlx5_0", Transport: transfer.RDMA, LineRate: 25e9, Latency: 5 * time.Microsecond})
				if err != nil {
					b.Fatal(err)
				}
				size := func(id uint64) int64 { return (1 + int64(id*7919%64)) << 20 }
				rateCap := func(id uint64) float64 {
					if capped && id%3 == 0 {
						return float64(1+id%5) * 1e9
					}
					return 0
				}
				var id uint64
				for ; id < uint64(k); id++ {
					n.Start(time.Duration(id)*time.Microsecond, id, size(id), rateCap(id))
				}
				out := make([]transfer.Completion, 0, k)
				b.ReportAllocs()
				b.ResetTimer()
				for done := 0; done < b.N; {
					at, ok := n.NextEvent()
					if !ok {
						b.Fatal("idle NIC")
					}
					out = adv(n, at, out[:0])
					for range out {
						n.Start(at, id, size(id), rateCap(id))
						id++
					}
					done += len(out)
				}
			})
		}
	}
}

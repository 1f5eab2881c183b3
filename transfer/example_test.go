package transfer_test

import (
	"fmt"
	"time"

	"github.com/pdemu/pdemu/transfer"
)

// An actor owns a NIC, starts transfers when KV is ready, and arms a timer
// for NextEvent; when it fires it calls Advance and handles completions.
func ExampleNIC() {
	nic, err := transfer.NewNIC(transfer.Config{
		Name:      "p0/mlx5_0",
		Transport: transfer.RDMA,
		LineRate:  25e9, // 200 Gb/s
		Latency:   5 * time.Microsecond,
	})
	if err != nil {
		panic(err)
	}
	const kvPerToken = 98_304                              // qwen3-coder-30b-a3b, bf16
	nic.Start(0, 1, 50_000*kvPerToken, 0)                  // a 50k-token reseed
	nic.Start(10*time.Millisecond, 2, 8_192*kvPerToken, 0) // an 8k-token seed, shares the NIC
	nic.Cut(400 * time.Millisecond)
	nic.Start(500*time.Millisecond, 3, 1, 0) // the NIC is down: fails at once

	for {
		at, ok := nic.NextEvent()
		if !ok {
			break
		}
		nic.Advance(at)
		for _, c := range nic.Ready().Out {
			fmt.Printf("transfer %d at %v err=%v\n", c.ID, c.At, c.Err)
		}
	}
	fmt.Println("isolated 50k-token estimate:", transfer.Estimate(nic.Config(), 50_000*kvPerToken))
	// Transfer 2 joins at 10.405 ms and halves transfer 1's share: it moves
	// 805 MB at 10 GB/s (80.53 ms); transfer 1 has 3.91 GB left at 20 GB/s.
	// Output:
	// transfer 2 at 90.935637ms err=<nil>
	// transfer 1 at 286.430319ms err=<nil>
	// transfer 3 at 500ms err=transfer: NIC "p0/mlx5_0" cut
	// isolated 50k-token estimate: 246.165ms
}

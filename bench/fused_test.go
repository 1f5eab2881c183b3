package bench_test

import (
	"context"
	"testing"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// BenchmarkReplayFused replays the embedded fused-worker scenarios (4-way
// cache-aware data parallelism and the bucketed deployments) on the
// virtual clock: their hot paths are the fused workers' block-LRU prefix
// caches and the cache-aware local routing (policy.CacheAwareDP, whose
// LongestPrefix walks each request's prompt).
func BenchmarkReplayFused(b *testing.B) {
	for _, name := range []string{"dp4.hcl", "buckets-3.hcl", "buckets-3-strict.hcl"} {
		b.Run(name, func(b *testing.B) {
			src, err := scenarios.Read(name)
			if err != nil {
				b.Fatal(err)
			}
			spec, err := topology.Parse("<embedded>/"+name, src, topology.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			reqs := 0
			for b.Loop() {
				res, err := actors.Run(context.Background(), spec, actors.Options{})
				if err != nil {
					b.Fatal(err)
				}
				reqs += res.Summary.Requests.Total
			}
			b.ReportMetric(float64(reqs)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

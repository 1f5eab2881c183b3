package bench_test

import "testing"

// BenchmarkReplayFused replays the embedded fused-worker scenarios (4-way
// cache-aware data parallelism and the bucketed deployments) on the
// virtual clock: their hot paths are the fused workers' block-LRU prefix
// caches and the cache-aware local routing (policy.CacheAwareDP, whose
// LongestPrefix walks each request's prompt).
func BenchmarkReplayFused(b *testing.B) {
	for _, name := range []string{"dp4.hcl", "buckets-3.hcl", "buckets-3-strict.hcl"} {
		b.Run(name, func(b *testing.B) {
			spec, _ := embeddedSpec(b, name)
			replay(b, spec, nil)
		})
	}
}

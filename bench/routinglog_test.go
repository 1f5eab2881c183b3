package bench_test

import "testing"

// BenchmarkReplayNoRoutingLog is BenchmarkReplay with the P/D decision log
// off (router routing_log = false): the difference is what
// routing_log.jsonl costs.
func BenchmarkReplayNoRoutingLog(b *testing.B) {
	spec := defaultSpec(b)
	spec.Router.RoutingLog = false
	reqs := replay(b, spec, nil)
	b.ReportMetric(float64(reqs)/float64(b.N), "req/op")
}

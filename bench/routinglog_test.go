package bench_test

import (
	"context"
	"testing"

	"github.com/pdemu/pdemu/actors"
)

// BenchmarkReplayNoRoutingLog is BenchmarkReplay with the P/D decision log
// off (router routing_log = false): the difference is what
// routing_log.jsonl costs.
func BenchmarkReplayNoRoutingLog(b *testing.B) {
	spec := defaultSpec(b)
	spec.Router.RoutingLog = false
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
	b.ReportMetric(float64(reqs)/float64(b.N), "req/op")
}

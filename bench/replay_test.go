package bench_test

import (
	"context"
	"testing"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

func defaultSpec(b *testing.B) *topology.Spec {
	src, err := scenarios.Read(scenarios.Default)
	if err != nil {
		b.Fatal(err)
	}
	spec, err := topology.Parse("<embedded>/"+scenarios.Default, src, topology.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return spec
}

// BenchmarkReplay replays the default scenario on the virtual clock and
// reports requests/s and emulated seconds per wall second. Goal: ≥ 10,000
// emulated s per wall s on a 2-core machine.
func BenchmarkReplay(b *testing.B) {
	spec := defaultSpec(b)
	// One run before the loop (b.Loop resets the timer and the allocation
	// counts on its first call): the first run in a process creates the
	// actor system that later runs borrow (actors/syspool.go, ~66k
	// allocations), which the loop would otherwise spread over b.N runs
	// (allocs/op was 2.7k per run + 66k/b.N: 5.9k at b.N = 20).
	if _, err := actors.Run(context.Background(), spec, actors.Options{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var reqs int
	var emulated float64
	cpu0 := cpuTime()
	for b.Loop() {
		res, err := actors.Run(context.Background(), spec, actors.Options{})
		if err != nil {
			b.Fatal(err)
		}
		reqs += res.Summary.Requests.Total
		emulated += res.End.Seconds()
	}
	wall := b.Elapsed().Seconds()
	b.ReportMetric(float64(reqs)/wall, "req/s")
	b.ReportMetric(emulated/wall, "emu-s/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

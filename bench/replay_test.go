package bench_test

import (
	"testing"

	"github.com/pdemu/pdemu/actors"
)

// BenchmarkReplay replays the default scenario on the virtual clock and
// reports requests/s and emulated seconds per wall second. Goal: ≥ 10,000
// emulated s per wall s on a 2-core machine.
func BenchmarkReplay(b *testing.B) {
	spec := defaultSpec(b)
	var emulated float64
	cpu0 := cpuTime()
	replay(b, spec, func(res *actors.Result) { emulated += res.End.Seconds() })
	b.ReportMetric(emulated/b.Elapsed().Seconds(), "emu-s/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

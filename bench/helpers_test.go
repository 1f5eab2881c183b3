package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// embeddedSpec parses an embedded scenario as pdemu run would (relative
// trace paths resolved from the repository's scenarios/), with sets
// applied. ok is false when its trace is not on this machine.
func embeddedSpec(b testing.TB, name string, set ...string) (spec *topology.Spec, ok bool) {
	src, err := scenarios.Read(name)
	if err != nil {
		b.Fatal(err)
	}
	base, err := filepath.Abs("../scenarios")
	if err != nil {
		b.Fatal(err)
	}
	spec, err = topology.Parse("<embedded>/"+name, src, topology.Options{BaseDir: base, Set: set})
	if err != nil {
		b.Fatal(err)
	}
	if t := spec.Workload.Trace; t != "" {
		if _, err := os.Stat(t); err != nil {
			return nil, false
		}
	}
	return spec, true
}

// defaultSpec is the embedded default scenario (it replays no trace).
func defaultSpec(b *testing.B) *topology.Spec {
	spec, _ := embeddedSpec(b, scenarios.Default)
	return spec
}

// replay runs spec on the virtual clock b.N times with allocations
// reported, passes each result to each (when not nil), reports req/s and
// returns the requests run in all.
func replay(b *testing.B, spec *topology.Spec, each func(*actors.Result)) int {
	reqs, _ := replayCPU(b, spec, each)
	return reqs
}

// replayCPU is replay that also returns the process's CPU time over the
// b.N measured runs (the warm-up run not included).
func replayCPU(b *testing.B, spec *topology.Spec, each func(*actors.Result)) (int, time.Duration) {
	// One run before the loop (b.Loop resets the timer and the allocation
	// counts on its first call): the first run in a process creates the
	// actor system that later runs borrow (actors/syspool.go, ~66k
	// allocations), which the loop would otherwise spread over b.N runs
	// (BenchmarkReplay's allocs/op was 2.7k per run + 66k/b.N: 5.9k at b.N = 20).
	if _, err := actors.Run(context.Background(), spec, actors.Options{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	reqs := 0
	cpu0 := cpuTime()
	for b.Loop() {
		res, err := actors.Run(context.Background(), spec, actors.Options{})
		if err != nil {
			b.Fatal(err)
		}
		reqs += res.Summary.Requests.Total
		if each != nil {
			each(res)
		}
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(reqs)/b.Elapsed().Seconds(), "req/s")
	return reqs, cpu
}

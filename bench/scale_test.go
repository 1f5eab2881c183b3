package bench_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// -bench.million adds the 1M-request case to BenchmarkScaleRequests (about
// a minute and a few hundred MB per run).
var million = flag.Bool("bench.million", false, "BenchmarkScaleRequests: also replay 1M requests")

// -bench.w256 adds 64P192D (256 workers) to BenchmarkScaleWorkers: with the
// decision log (8 candidates of each of about a million tries, kept until
// the outputs are written) it takes gigabytes.
var w256 = flag.Bool("bench.w256", false, "BenchmarkScaleWorkers: also run 256 workers (GBs of decision log)")

// scaleSpec is the default scenario with n prefill and 3n decode workers,
// sessions sessions and the session stagger scaled by 1/n (constant load
// per worker when sessions = 16n; more sessions at one n make a longer run
// at the same load), with ε = |D| (4p12d.hcl's family).
func scaleSpec(b testing.TB, n, sessions int) *topology.Spec {
	src, err := scenarios.Read(scenarios.Default)
	if err != nil {
		b.Fatal(err)
	}
	stagger := time.Second / time.Duration(n)
	spec, err := topology.Parse("<embedded>/"+scenarios.Default, src, topology.Options{
		Vars: map[string]string{"prefills": fmt.Sprint(n), "decodes": fmt.Sprint(3 * n), "sessions": fmt.Sprint(sessions)},
		Set: []string{
			fmt.Sprintf("router.epsilon=%d", 3*n),
			fmt.Sprintf("workload.generator.session_stagger=%q", stagger.String()),
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return spec
}

// peakHeap samples the live heap (objects) every millisecond until stop
// and returns the maximum seen.
func peakHeap() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	var mu sync.Mutex
	peak := read()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				v := read()
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return max(peak, read())
	}
}

// warmOnce makes warmUp's run once per process.
var warmOnce sync.Once

// warmUp makes a small run once per process, so that the actor system
// it creates (actors/syspool.go: ~66k allocations, a few ms) is not
// counted in the first measured benchmark's figures.
func warmUp(b testing.TB) {
	warmOnce.Do(func() {
		if _, err := actors.Run(context.Background(), scaleSpec(b, 1, 1), actors.Options{}); err != nil {
			b.Fatal(err)
		}
	})
}

// scalePoint is one measured size of a scaling benchmark.
type scalePoint struct{ x, nsPerReq, cpuPerReq, peakMB float64 }

// runScale replays spec b.N times (outputs streamed to a temporary
// directory as the requests end, as pdemu run does) and reports ns/req, peak-MB (the largest
// live heap seen during a run, from a GC'd start) and, against the
// previous point of the same benchmark, the growth exponents
// d log(cpu-ns/req) / d log x and d log(peak-MB) / d log x. cpu-ns/req is
// the process's CPU time (all threads) per request, steadier than ns/req
// (wall) on a shared machine.
func runScale(b *testing.B, spec *topology.Spec, x float64, prev *scalePoint) {
	// The first run in a process creates the actor system later runs
	// borrow (actors/syspool.go, ~66k allocations and a few ms): a small
	// run before the first measured one, or the first size's allocs/op
	// and cpu-ns/req carry it (workers=4 showed 39.9k allocs/op against
	// 26.0k at workers=16).
	warmUp(b)
	b.ReportAllocs()
	var reqs int
	var msgs int64
	var peak uint64
	var cpu time.Duration
	dir := b.TempDir()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		stop := peakHeap()
		b.StartTimer()
		cpu0 := cpuTime()
		// The streaming path of pdemu run: records to disk as requests end.
		st, err := output.NewStream(dir, output.StreamOptions{WriteOptions: output.WriteOptions{Force: true}})
		if err != nil {
			b.Fatal(err)
		}
		res, err := actors.Run(context.Background(), spec, actors.Options{Records: st})
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Write(res); err != nil {
			b.Fatal(err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		reqs += res.Summary.Requests.Total
		msgs += res.Summary.Runtime.Messages
		res = nil
		cpu += cpuTime() - cpu0
		b.StopTimer()
		peak = max(peak, stop())
		b.StartTimer()
	}
	p := scalePoint{x: x, nsPerReq: float64(b.Elapsed().Nanoseconds()) / float64(reqs),
		cpuPerReq: float64(cpu.Nanoseconds()) / float64(reqs), peakMB: float64(peak) / (1 << 20)}
	b.ReportMetric(p.nsPerReq, "ns/req")
	b.ReportMetric(p.cpuPerReq, "cpu-ns/req")
	// Per delivered message (issue 24: ≤ 3 µs at every size), and the
	// messages per request that make up the rest of cpu-ns/req.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(msgs), "cpu-ns/msg")
	b.ReportMetric(float64(msgs)/float64(reqs), "msgs/req")
	b.ReportMetric(p.peakMB, "peak-MB")
	b.ReportMetric(p.peakMB*(1<<20)/float64(reqs/b.N), "peak-B/req")
	if prev.x > 0 {
		lx := math.Log(p.x / prev.x)
		b.ReportMetric(math.Log(p.cpuPerReq/prev.cpuPerReq)/lx, "cpu-exp")
		b.ReportMetric(math.Log(p.peakMB/prev.peakMB)/lx, "mem-exp")
	}
	*prev = p
}

// BenchmarkScaleRequests: per-request CPU and peak memory against the
// number of requests on the default 1P3D cluster at constant load (more
// sessions at the same stagger make a longer run): 10k and 100k requests,
// and 1M with -bench.million. Flat memory means mem-exp near 0.
func BenchmarkScaleRequests(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if *million {
		sizes = append(sizes, 1_000_000)
	}
	var prev scalePoint
	for _, n := range sizes {
		spec := scaleSpec(b, 1, n/24) // 24 turns per session
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) { runScale(b, spec, float64(n), &prev) })
	}
}

// BenchmarkScaleWorkers: per-request CPU and peak memory against the
// cluster size, nPnD with 4n workers from 4 to 256 at constant load per
// worker (16n sessions, stagger 1s/n, 384n requests); 256 workers with
// -bench.w256. The target is cpu-exp ≤ 0.15.
func BenchmarkScaleWorkers(b *testing.B) {
	var prev scalePoint
	sizes := []int{1, 4, 16}
	if *w256 {
		sizes = append(sizes, 64)
	}
	for _, n := range sizes {
		spec := scaleSpec(b, n, 16*n)
		b.Run(fmt.Sprintf("workers=%d", 4*n), func(b *testing.B) { runScale(b, spec, float64(4*n), &prev) })
	}
}

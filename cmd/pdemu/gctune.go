package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// A `pdemu run` is a short batch process: the Mooncake 1P3D run allocates
// ~20 MB in all with a live heap under 16 MB, yet the collector's default
// (GOGC=100 from a 4 MB goal) ran 5 cycles in it, 17 % of its
// instructions (callgrind: 660M Ir at GOGC=100, 550M with GOGC=off).
// While the live heap is small the run therefore collects only when the
// process's Go memory reaches smallHeapLimit (GOGC=off plus a soft memory
// limit, the runtime's documented configuration); after the first cycle
// that finds more than smallHeapLive live, the defaults come back for the
// rest of the process, so a large run's peak memory is what it was.
// 40 MiB rather than 64: the Mooncake runs never reach it either way, and
// the agentic runs (13 MB live at their first cycle) touched 17 MiB more
// pages at 64 for no CPU gain (paired runs). GOGC or GOMEMLIMIT in the
// environment turn this off. docs/OUTPUTS.md ("Memory") states it.
const (
	smallHeapLimit = 40 << 20
	smallHeapLive  = smallHeapLimit / 4
)

var gcTuneOnce sync.Once

// tuneGCForBatch applies the small-heap setting once per process, unless
// the environment sets the collector's own knobs.
func tuneGCForBatch() {
	gcTuneOnce.Do(func() {
		if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
			return
		}
		startSmallHeap(smallHeapLimit, smallHeapLive, liveHeap)
	})
}

// gcSentinel is freed by every collection (a pointer field keeps it out of
// the tiny allocator, whose blocks outlive their objects).
type gcSentinel struct {
	_ *byte
	_ [8]byte
}

// startSmallHeap turns the proportional collector off under a memory
// limit and watches each cycle: once live() reports more than maxLive
// after a collection, it restores the previous GOGC and memory limit.
// It returns a function that restores them at once (tests).
func startSmallHeap(limit, maxLive int64, live func() uint64) (restore func()) {
	prevPct := debug.SetGCPercent(-1)
	prevLimit := debug.SetMemoryLimit(limit)
	var stopped atomic.Bool
	restore = func() {
		if stopped.CompareAndSwap(false, true) {
			debug.SetGCPercent(prevPct)
			debug.SetMemoryLimit(prevLimit)
		}
	}
	var arm func()
	arm = func() {
		runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
			if stopped.Load() {
				return
			}
			if live() > uint64(maxLive) {
				restore()
				return
			}
			arm()
		})
	}
	arm()
	return restore
}

// liveHeap is the heap the last collection marked live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return math.MaxUint64 // unknown: back to the defaults
	}
	return s[0].Value.Uint64()
}

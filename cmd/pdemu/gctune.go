package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// A `pdemu run` is a short batch process: the Mooncake 1P3D run allocates
// ~20 MB in all with a live heap under 16 MB, yet the collector's default
// (GOGC=100 from a 4 MB goal) ran 5 cycles in it, 17 % of its
// instructions (callgrind: 660M Ir at GOGC=100, 550M with GOGC=off).
// While the live heap is small the run therefore collects only when the
// process's Go memory reaches smallHeapLimit (GOGC=off plus a soft memory
// limit, the runtime's documented configuration); after the first cycle
// that finds more than smallHeapLive live, the defaults come back for the
// rest of the process.
// 40 MiB rather than 64: the Mooncake runs never reach it either way, and
// the agentic runs (13 MB live at their first cycle) touched 17 MiB more
// pages at 64 for no CPU gain (paired runs). GOGC or GOMEMLIMIT in the
// environment turn this off. docs/OUTPUTS.md ("Memory") states it.
//
// A large run's peak memory is its GC goal, twice its live heap at
// GOGC=100 (the 1M-request 1P3D run: ~90 MB live, ~245 MiB peak RSS, the
// last ~40 MiB of it the end-of-run summary's allocations on top of the
// goal). Once a cycle finds more than bigHeapLive live, every cycle after
// it sets a soft memory limit of its live heap plus bigHeapRoom, so the
// heap may grow by bigHeapRoom rather than by its whole size before the
// next cycle, and the runtime returns free pages to stay under the limit;
// a cycle that finds less lifts it again. The limit follows the live heap
// up, so it never holds the collector at a heap it cannot shrink to. The
// room equals the live heap at the threshold: at bigHeapLive the two
// goals meet, and below it nothing changes.
const (
	smallHeapLimit = 40 << 20
	smallHeapLive  = smallHeapLimit / 4
	bigHeapLive    = 64 << 20
	bigHeapRoom    = bigHeapLive
)

var gcTuneOnce sync.Once

// tuneGCForBatch applies the batch settings once per process, unless the
// environment sets the collector's own knobs.
func tuneGCForBatch() {
	gcTuneOnce.Do(func() {
		if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
			return
		}
		startSmallHeap(gcTune{limit: smallHeapLimit, maxLive: smallHeapLive, bigLive: bigHeapLive, room: bigHeapRoom}, liveHeap)
	})
}

// gcTune is the tuner's thresholds (see above).
type gcTune struct {
	limit, maxLive int64 // the small-heap limit and the live heap that ends it
	bigLive, room  int64 // past bigLive live, a limit of live + room
}

// gcSentinel is freed by every collection (a pointer field keeps it out of
// the tiny allocator, whose blocks outlive their objects).
type gcSentinel struct {
	_ *byte
	_ [8]byte
}

// startSmallHeap turns the proportional collector off under the memory
// limit tu.limit and watches each cycle: once live() reports more than
// tu.maxLive after a collection, it restores the previous GOGC and memory
// limit, and from then on sets the limit to live() + tu.room after each
// cycle that finds more than tu.bigLive live (the previous limit after
// one that finds less). It returns a function that stops the watch and
// restores the previous settings at once (tests).
func startSmallHeap(tu gcTune, live func() uint64) (restore func()) {
	prevPct := debug.SetGCPercent(-1)
	prevLimit := debug.SetMemoryLimit(tu.limit)
	var mu sync.Mutex // guards stopped and small, and orders the settings
	stopped, small := false, true
	restore = func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			stopped = true
			debug.SetGCPercent(prevPct)
			debug.SetMemoryLimit(prevLimit)
		}
	}
	var arm func()
	arm = func() {
		runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
			mu.Lock()
			defer mu.Unlock()
			if stopped {
				return
			}
			l := live()
			switch {
			case small && l <= uint64(tu.maxLive):
			case small:
				small = false
				debug.SetGCPercent(prevPct)
				debug.SetMemoryLimit(prevLimit)
				fallthrough
			default:
				lim := prevLimit
				if l > uint64(tu.bigLive) && l < math.MaxInt64/2 {
					lim = min(prevLimit, int64(l)+tu.room)
				}
				debug.SetMemoryLimit(lim)
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

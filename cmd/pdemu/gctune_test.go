package main

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// The in-process runs of this package's tests leave the collector's
// settings alone (they are process state, which TestSmallHeapRestoresDefaults
// reads): the tuner is tested through startSmallHeap.
func init() { gcTuneOnce.Do(func() {}) }

func gcSetting(t *testing.T, name string) int64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	require.Equal(t, metrics.KindUint64, s[0].Value.Kind(), name)
	return int64(s[0].Value.Uint64())
}

// collectUntil runs collections (each lets the finalizer goroutine run)
// until cond holds, at most n times.
func collectUntil(n int, cond func() bool) bool {
	for range n {
		if cond() {
			return true
		}
		runtime.GC()
		runtime.Gosched()
	}
	return cond()
}

// TestSmallHeapRestoresDefaults: the proportional collector is off under
// the limit while the live heap is small, every collection is watched, and
// the first one that finds more than maxLive live brings back the previous
// GOGC and memory limit; from then on a collection that finds more than
// bigLive live sets a limit of live + room, one that finds less the
// previous limit; restore stops the watch.
func TestSmallHeapRestoresDefaults(t *testing.T) {
	pct0 := gcSetting(t, "/gc/gogc:percent")
	lim0 := gcSetting(t, "/gc/gomemlimit:bytes")
	var live, seen atomic.Int64
	restore := startSmallHeap(gcTune{limit: 64 << 20, maxLive: 1000, bigLive: 100 << 20, room: 30 << 20}, func() uint64 {
		seen.Add(1)
		return uint64(live.Load())
	})
	defer restore()
	require.EqualValues(t, -1, gcSetting(t, "/gc/gogc:percent"), "GOGC off")
	require.EqualValues(t, 64<<20, gcSetting(t, "/gc/gomemlimit:bytes"))

	require.True(t, collectUntil(100, func() bool { return seen.Load() >= 3 }), "the watch is re-armed after each collection")
	require.EqualValues(t, -1, gcSetting(t, "/gc/gogc:percent"), "a small live heap keeps GOGC off")

	live.Store(1001)
	require.True(t, collectUntil(100, func() bool { return gcSetting(t, "/gc/gogc:percent") == pct0 }),
		"a live heap above maxLive restores GOGC %d", pct0)
	require.True(t, collectUntil(100, func() bool { return gcSetting(t, "/gc/gomemlimit:bytes") == lim0 }), "and the limit")

	live.Store(150 << 20)
	require.True(t, collectUntil(100, func() bool { return gcSetting(t, "/gc/gomemlimit:bytes") == 180<<20 }),
		"past bigLive: a limit of live + room")
	require.EqualValues(t, pct0, gcSetting(t, "/gc/gogc:percent"))
	live.Store(200 << 20)
	require.True(t, collectUntil(100, func() bool { return gcSetting(t, "/gc/gomemlimit:bytes") == 230<<20 }),
		"the limit follows the live heap up")
	live.Store(50 << 20)
	require.True(t, collectUntil(100, func() bool { return gcSetting(t, "/gc/gomemlimit:bytes") == lim0 }),
		"below bigLive: the previous limit")

	restore()
	live.Store(150 << 20)
	n := seen.Load()
	collectUntil(5, func() bool { return false })
	require.Equal(t, lim0, gcSetting(t, "/gc/gomemlimit:bytes"), "restored")
	require.Equal(t, pct0, gcSetting(t, "/gc/gogc:percent"))
	require.Equal(t, n, seen.Load(), "no watch after restore")
}

package bench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// shardedRW is a reader-writer lock whose readers do not share a cache
// line: one sync.RWMutex per shard, each on cache lines of its own. A
// reader locks one shard (the one its ticket names); a writer locks them
// all, in order. With one sync.RWMutex, every RLock and RUnlock is an
// atomic add on the same word: on two cores routing in parallel that
// line moves between the cores twice per decision, which is what kept
// BenchmarkRouteParallel's speed-up below 2 on the read-only warm path
// (golang/go#17973, "sync: RWMutex scales poorly with CPU count";
// BenchmarkReadLock measures the two side by side).
type shardedRW struct {
	shards []paddedRW
	next   atomic.Uint32 // the next ticket's shard
}

// paddedRW is a sync.RWMutex alone on two cache lines (Intel's adjacent
// line prefetcher moves lines in pairs).
type paddedRW struct {
	sync.RWMutex
	_ [128 - unsafe.Sizeof(sync.RWMutex{})%128]byte
}

func newShardedRW() *shardedRW {
	return &shardedRW{shards: make([]paddedRW, max(1, runtime.GOMAXPROCS(0)))}
}

// ticket names a shard for a reader; spread round robin, so readers
// holding different tickets (one each, e.g. in a per-P sync.Pool object)
// lock different shards.
func (l *shardedRW) ticket() uint32 { return (l.next.Add(1) - 1) % uint32(len(l.shards)) }

func (l *shardedRW) rlock(t uint32)   { l.shards[t].RLock() }
func (l *shardedRW) runlock(t uint32) { l.shards[t].RUnlock() }

func (l *shardedRW) lock() {
	for i := range l.shards {
		l.shards[i].Lock()
	}
}

func (l *shardedRW) unlock() {
	for i := len(l.shards) - 1; i >= 0; i-- {
		l.shards[i].Unlock()
	}
}

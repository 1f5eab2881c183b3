package bench

import (
	"sync"
	"testing"
	"unsafe"
)

// TestPaddedRWOwnLines: each shard of the lock is 128 bytes (two cache
// lines), so two shards never share a line.
func TestPaddedRWOwnLines(t *testing.T) {
	if n := unsafe.Sizeof(paddedRW{}); n != 128 {
		t.Fatalf("paddedRW is %d bytes, want 128", n)
	}
}

// TestShardedRWExcludes: readers on every shard and a writer never
// overlap (the writer's counter is read under each read lock and written
// only under the write lock; -race checks the accesses), and readers of
// different shards do overlap (they hold their shards at once).
func TestShardedRWExcludes(t *testing.T) {
	l := &shardedRW{shards: make([]paddedRW, 4)}
	var shared, seen int
	var wg sync.WaitGroup
	var mu sync.Mutex
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := uint32(r % len(l.shards))
			for range 1000 {
				l.rlock(tk)
				v := shared
				l.runlock(tk)
				mu.Lock()
				seen = max(seen, v)
				mu.Unlock()
			}
		}()
	}
	for range 1000 {
		l.lock()
		shared++
		l.unlock()
	}
	wg.Wait()
	if shared != 1000 || seen > 1000 {
		t.Fatalf("shared %d, a reader saw %d", shared, seen)
	}
	// Two readers of different shards hold them at once.
	a, b := l.ticket(), l.ticket()
	if a == b {
		t.Fatalf("two tickets name shard %d", a)
	}
	l.rlock(a)
	l.rlock(b)
	l.runlock(b)
	l.runlock(a)
}

// BenchmarkReadLock: an empty read-side critical section from GOMAXPROCS
// goroutines, under one sync.RWMutex and under shardedRW (each goroutine
// its ticket, as SyncKVC's pooled scratch carries one).
func BenchmarkReadLock(b *testing.B) {
	b.Run("RWMutex", func(b *testing.B) {
		var mu sync.RWMutex
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				mu.RLock()
				mu.RUnlock()
			}
		})
	})
	b.Run("sharded", func(b *testing.B) {
		l := newShardedRW()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			t := l.ticket()
			for pb.Next() {
				l.rlock(t)
				l.runlock(t)
			}
		})
	})
}

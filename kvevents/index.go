package kvevents

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Index is what a KV-aware router keeps: for each worker, the set of
// blocks its events say it holds. It is safe for concurrent use.
type Index struct {
	mu      sync.Mutex
	workers map[string]map[uint64]struct{}
	lastSeq map[string]int64
	gaps    int
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{workers: map[string]map[uint64]struct{}{}, lastSeq: map[string]int64{}}
}

// Apply replays batch seq of worker's events. A sequence number that does
// not follow the previous one is counted in Gaps (missed batches).
func (x *Index) Apply(worker string, seq int64, b Batch) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if last, ok := x.lastSeq[worker]; ok && seq != last+1 {
		x.gaps++
	}
	x.lastSeq[worker] = seq
	set := x.workers[worker]
	if set == nil {
		set = map[uint64]struct{}{}
		x.workers[worker] = set
	}
	for _, ev := range b.Events {
		switch ev.Kind {
		case BlockStored:
			for _, h := range ev.Hashes {
				set[h] = struct{}{}
			}
		case BlockRemoved:
			for _, h := range ev.Hashes {
				delete(set, h)
			}
		case AllBlocksCleared:
			clear(set)
		}
	}
}

// Blocks is worker's block set, sorted.
func (x *Index) Blocks(worker string) []uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := slices.Sorted(maps.Keys(x.workers[worker]))
	return out
}

// Match is how many leading blocks of a prompt worker holds.
func (x *Index) Match(worker string, blocks []uint64) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	set := x.workers[worker]
	n := 0
	for n < len(blocks) {
		if _, ok := set[blocks[n]]; !ok {
			break
		}
		n++
	}
	return n
}

// Seq is the last sequence number applied for worker (-1: none).
func (x *Index) Seq(worker string) int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s, ok := x.lastSeq[worker]; ok {
		return s
	}
	return -1
}

// Gaps is the number of sequence gaps seen.
func (x *Index) Gaps() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.gaps
}

func (x *Index) String() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return fmt.Sprintf("kvevents.Index{%d workers, %d gaps}", len(x.workers), x.gaps)
}

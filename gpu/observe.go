package gpu

import "time"

// CacheChange is one change of a prefill worker's prefix cache
// (PrefillConfig.TrackCache): a finished prefill inserted (or refreshed)
// Stored, a prompt's blocks in chain order, and evicted Removed to make
// room, at emulated time At. A block of Stored may be in Removed too (a
// chain larger than the cache); the cache's content after the change is
// (before ∪ Stored) − Removed, applied in that order.
type CacheChange struct {
	At      time.Duration
	Stored  []uint64
	Removed []uint64
}

// TakeCacheChanges returns and clears the cache changes since the last
// call, in order (nil unless PrefillConfig.TrackCache).
func (w *PrefillWorker) TakeCacheChanges() []CacheChange {
	out := w.changes
	w.changes = nil
	return out
}

// CachedBlocks reports whether each of blocks is in the prefix cache now,
// without touching the LRU order (for checks against published events).
func (w *PrefillWorker) CachedBlocks(blocks []uint64) []bool {
	out := make([]bool, len(blocks))
	for i, b := range blocks {
		out[i] = w.cache.has(b)
	}
	return out
}

// CacheKeys is every block hash in the prefix cache, most recent first.
func (w *PrefillWorker) CacheKeys() []uint64 { return keys(w.cache) }

// ResidentBlocks returns the prompt blocks of session s's resident KV on
// this worker (its last admitted request's; the slice is the worker's,
// read only) and whether s is resident at all.
func (w *DecodeWorker) ResidentBlocks(s int32) ([]uint64, bool) {
	r := w.sess[s]
	if r == nil {
		return nil, false
	}
	return r.blocks, true
}

// ResidentSessions calls f for every resident session (in no particular
// order).
func (w *DecodeWorker) ResidentSessions(f func(s int32, blocks []uint64)) {
	for id, r := range w.sess {
		f(id, r.blocks)
	}
}

// TakeCacheChanges returns and clears the changes of the blocks the
// worker holds since the last call, in order (nil unless
// FusedConfig.TrackCache). Stored blocks are in HBM; Removed ones left
// the worker (a block moving from HBM to the DRAM tier stays on it).
func (f *FusedWorker) TakeCacheChanges() []CacheChange {
	out := f.changes
	f.changes = nil
	return out
}

// CacheKeys is every block the worker holds, HBM first, then the DRAM
// tier.
func (f *FusedWorker) CacheKeys() []uint64 {
	out := keys(f.cache)
	if f.l1 != nil {
		out = append(out, keys(f.l1)...)
	}
	return out
}

func keys(c *BlockLRU) []uint64 { return c.list() }

package gpu

import (
	"fmt"
	"time"

	"github.com/pdemu/pdemu/effect"
	"github.com/pdemu/pdemu/policy"
)

// PrefillConfig configures a prefill worker.
type PrefillConfig struct {
	Name           string
	CacheTokens    int // prefix cache capacity in tokens (0 = no cache)
	MaxBatchTokens int // new tokens per batch (a single larger request runs alone)
	// SnapshotBackup models KVC's P backup as the spec describes it (§9
	// Q4): a session's copy on P is the snapshot of its last Seed or
	// Reseed prompt, which neither Direct appends (they never reach P) nor
	// Fallback prefills refresh. A Reseed or Fallback of a session with a
	// snapshot reuses at most the snapshot's blocks, so it re-prefills
	// everything appended since; a session's first Seed still reuses shared
	// prefixes (system prompt) from the prefix cache.
	SnapshotBackup bool
	// FallbackRefresh (with D→P sync): a Fallback's prefill, which computes
	// the session's whole prompt on this worker, becomes its backup too.
	FallbackRefresh bool
	// TrackCache records every change of the prefix cache made by a
	// finished prefill (TakeCacheChanges): the blocks it inserted and the
	// blocks evicted to make room, in order (fleet's KV-cache events).
	TrackCache bool
}

// PrefillWorker is a prefill worker's pure state machine: a FIFO queue
// served in batches under a token budget, with a block-LRU prefix cache so
// that only uncached prompt tokens are computed. A batch takes the time of
// one forward pass over all its members (weights read once); all of them
// finish together at its end.
type PrefillWorker struct {
	cfg      PrefillConfig
	cost     Cost
	queue    []*Job
	batch    []*Job
	batchEnd time.Duration
	cache    *BlockLRU
	done     []*Job
	snap     map[int32]int // SnapshotBackup: session → blocks of its backup
	changes  []CacheChange // TrackCache: changes since TakeCacheChanges
}

// NewPrefillWorker validates cfg.
func NewPrefillWorker(cfg PrefillConfig, cost Cost) (*PrefillWorker, error) {
	if cfg.CacheTokens < 0 || cost == nil {
		return nil, fmt.Errorf("gpu: prefill worker %q needs cache_tokens >= 0 and a cost model", cfg.Name)
	}
	if cfg.MaxBatchTokens <= 0 {
		cfg.MaxBatchTokens = 16384
	}
	w := &PrefillWorker{cfg: cfg, cost: cost, cache: NewBlockLRU(cfg.CacheTokens)}
	w.cache.trackEvictions = cfg.TrackCache
	return w, nil
}

// Queued is the number of jobs waiting; Running the number in the batch.
func (w *PrefillWorker) Queued() int  { return len(w.queue) }
func (w *PrefillWorker) Running() int { return len(w.batch) }

// CacheUsed is the prefix cache occupancy in tokens.
func (w *PrefillWorker) CacheUsed() int { return w.cache.Used() }

// Submit queues j for prefill.
func (w *PrefillWorker) Submit(now time.Duration, j *Job) {
	w.advance(now)
	j.PQueued = now
	w.queue = append(w.queue, j)
	w.start(now)
}

func (w *PrefillWorker) start(now time.Duration) {
	if len(w.batch) > 0 || len(w.queue) == 0 {
		return
	}
	var total int
	var pass Pass
	n := 0
	for n < len(w.queue) {
		j := w.queue[n]
		r := j.Req
		// Peek, not Match: the batch's Insert at its end refreshes these blocks
		// (nothing else touches this cache in between).
		hit := w.cache.Peek(r.Blocks)
		if n, ok := w.snap[r.Session]; ok && w.cfg.SnapshotBackup {
			hit = min(hit, n)
		}
		cached := min(hit*r.BlockTokens, r.InputLen-1)
		cached = max(cached, 0)
		fresh := r.InputLen - cached
		if n > 0 && total+fresh > w.cfg.MaxBatchTokens {
			break
		}
		total += fresh
		j.CachedTokens, j.PrefillTokens, j.PrefillStart = cached, fresh, now
		pass.AddPrefill(fresh, cached)
		n++
	}
	w.batch = append(w.batch[:0], w.queue[:n]...)
	w.queue = dropFront(w.queue, n)
	w.batchEnd = now + w.cost.StepTime(pass)
}

func (w *PrefillWorker) advance(now time.Duration) {
	for len(w.batch) > 0 && w.batchEnd <= now {
		t := w.batchEnd
		for _, j := range w.batch {
			j.PrefillEnd = t
			w.cache.Insert(j.Req.Blocks, j.Req.BlockTokens)
			if w.cfg.TrackCache {
				w.changes = append(w.changes, CacheChange{At: t, Stored: j.Req.Blocks, Removed: w.cache.takeEvicted()})
			}
			if w.cfg.SnapshotBackup {
				w.backup(j)
			}
			w.done = append(w.done, j)
		}
		clear(w.batch)
		w.batch = w.batch[:0]
		w.start(t)
	}
}

// backup records j's prompt as its session's snapshot when j seeds or
// reseeds it (and forgets the session after its last turn).
func (w *PrefillWorker) backup(j *Job) {
	r := j.Req
	if w.snap == nil {
		w.snap = make(map[int32]int)
	}
	switch {
	case r.Last:
		delete(w.snap, r.Session)
	case j.Mode == policy.ModeSeed || j.Mode == policy.ModeReseed,
		j.Mode == policy.ModeFallback && w.cfg.FallbackRefresh && w.snap[r.Session] < len(r.Blocks):
		w.snap[r.Session] = len(r.Blocks)
	}
}

// Advance runs the worker to now; Ready tells which prefills ended.
func (w *PrefillWorker) Advance(now time.Duration) { w.advance(now) }

// Ready returns and clears the jobs whose prefill ended since the last call
// (in completion order), with NextEvent as its wake-up. Out is reused:
// consume it before the next call.
func (w *PrefillWorker) Ready() effect.Ready[*Job] {
	at, ok := w.NextEvent()
	return effect.Take(&w.done, at, ok)
}

// NextEvent is when the current batch ends.
func (w *PrefillWorker) NextEvent() (time.Duration, bool) {
	if len(w.batch) == 0 {
		return 0, false
	}
	return w.batchEnd, true
}

// BlockLRU is a prefix cache of block hashes with an LRU replacement policy
// and a capacity in tokens. Nodes live in one slice linked by index (no
// per-block allocation, nothing for the GC to chase).
type BlockLRU struct {
	capTokens int
	used      int
	m         blockMap
	nodes     []lruNode // nodes[0] is the list sentinel: nodes[0].next is most recent
	free      []int32

	trackEvictions bool
	evicted        []uint64
}

type lruNode struct {
	key        uint64
	tokens     int32
	prev, next int32
}

// NewBlockLRU returns a cache holding at most capTokens tokens.
func NewBlockLRU(capTokens int) *BlockLRU {
	return &BlockLRU{capTokens: capTokens, nodes: make([]lruNode, 1)}
}

// Used is the cached tokens.
func (c *BlockLRU) Used() int { return c.used }

// Match returns how many leading blocks are cached, touching them. Blocks
// of a prefix are touched from the last to the first, so the first block of
// a chain is the most recent: eviction trims prefixes from their tail, like
// a radix cache evicting leaves, and never orphans a chain's tail.
func (c *BlockLRU) Match(blocks []uint64) int {
	n := c.Peek(blocks)
	var hint int32
	var run lruRun
	for k := n - 1; k >= 0; k-- {
		i := c.lookup(blocks[k], hint)
		hint = c.nodes[i].prev
		c.touchDeferred(&run, i)
	}
	c.flush(&run)
	return n
}

// lruRun is a run of nodes touched in a row that sit together in the LRU
// list, head .. tail in list order (0, 0 when empty). Touching nodes one by
// one from the last to the first of such a run leaves it at the front in
// the same order, so it is moved there in one splice when the run ends.
// Only the touched nodes' own positions are deferred: a node's prev link,
// which guides the next lookup, is the same either way (the nodes moved
// later lie after it), and the run is flushed before anything else
// changes the list.
type lruRun struct{ head, tail int32 }

// touchDeferred is touch(i), deferred through run.
func (c *BlockLRU) touchDeferred(run *lruRun, i int32) {
	if run.head != 0 && c.nodes[run.head].prev == i {
		run.head = i
		return
	}
	c.flush(run)
	run.head, run.tail = i, i
}

// flush moves run's nodes to the front of the list and empties it.
func (c *BlockLRU) flush(run *lruRun) {
	h, t := run.head, run.tail
	*run = lruRun{}
	if h == 0 || c.nodes[0].next == h {
		return
	}
	p, n := c.nodes[h].prev, c.nodes[t].next
	c.nodes[p].next = n
	c.nodes[n].prev = p
	old := c.nodes[0].next
	c.nodes[t].next = old
	c.nodes[old].prev = t
	c.nodes[h].prev = 0
	c.nodes[0].next = h
}

// Peek is Match without touching the LRU order.
func (c *BlockLRU) Peek(blocks []uint64) int {
	var i int32
	for k, b := range blocks {
		// After Insert or Match a chain sits in the LRU list in order, first
		// block most recent: the node after blocks[k-1]'s is the best guess
		// for blocks[k].
		if i = c.lookup(b, c.nodes[i].next); i == 0 {
			return k
		}
	}
	return len(blocks)
}

// lookup returns b's node (0 if b is not cached), trying hint first. Insert,
// Match and Peek walk a chain through the LRU list's links, where its
// blocks usually sit in order, instead of hashing every block: a hint is
// taken only if it is a live node holding b (a key has at most one live
// node), otherwise the map decides. Hints are read from a live node's links
// just before use, so they are live or the sentinel; the tokens check (a
// freed node has tokens 0) is a safeguard. The sentinel (node 0) is never a
// hint, whatever its key.
func (c *BlockLRU) lookup(b uint64, hint int32) int32 {
	if hint != 0 {
		if n := &c.nodes[hint]; n.key == b && n.tokens != 0 {
			return hint
		}
	}
	return c.m.get(b)
}

// remove drops key if cached (not counted as an eviction).
func (c *BlockLRU) remove(key uint64) {
	i := c.m.get(key)
	if i == 0 {
		return
	}
	c.unlink(i)
	c.m.del(key)
	c.used -= int(c.nodes[i].tokens)
	c.nodes[i].tokens = 0
	c.free = append(c.free, i)
}

// takeEvicted returns and clears the keys evicted since the last call.
func (c *BlockLRU) takeEvicted() []uint64 {
	if len(c.evicted) == 0 {
		return nil
	}
	out := c.evicted
	c.evicted = nil
	return out
}

// evictedSince is takeEvicted for a caller done with the keys before the
// cache evicts again: it keeps the buffer, which the next eviction
// overwrites (takeEvicted's fresh slice per call was 16 % of a fused
// worker's eviction cost, in growslice).
func (c *BlockLRU) evictedSince() []uint64 {
	out := c.evicted
	c.evicted = c.evicted[:0]
	return out
}

// Insert caches blocks (each of blockTokens tokens), evicting LRU blocks;
// like Match it leaves the first block most recent.
func (c *BlockLRU) Insert(blocks []uint64, blockTokens int) {
	if c.capTokens <= 0 || blockTokens <= 0 || blockTokens > c.capTokens {
		return
	}
	var hint int32 // where blocks[k] probably is (see lookup)
	var run lruRun // hits whose move to the front is pending
	for k := len(blocks) - 1; k >= 0; k-- {
		b := blocks[k]
		if i := c.lookup(b, hint); i != 0 {
			hint = c.nodes[i].prev // blocks[k-1] if the chain is in order
			c.touchDeferred(&run, i)
			continue
		}
		c.flush(&run)
		hint = 0
		for c.used+blockTokens > c.capTokens {
			c.evictOldest()
		}
		var i int32
		if n := len(c.free); n > 0 {
			i = c.free[n-1]
			c.free = c.free[:n-1]
		} else {
			c.nodes = append(c.nodes, lruNode{})
			i = int32(len(c.nodes) - 1)
		}
		c.nodes[i] = lruNode{key: b, tokens: int32(blockTokens)}
		c.m.put(b, i)
		c.used += blockTokens
		c.pushFront(i)
	}
	c.flush(&run)
}

func (c *BlockLRU) unlink(i int32) {
	n := &c.nodes[i]
	c.nodes[n.prev].next = n.next
	c.nodes[n.next].prev = n.prev
}

func (c *BlockLRU) pushFront(i int32) {
	head := c.nodes[0].next
	c.nodes[i].prev, c.nodes[i].next = 0, head
	c.nodes[head].prev = i
	c.nodes[0].next = i
}

func (c *BlockLRU) evictOldest() {
	i := c.nodes[0].prev
	if i == 0 {
		return
	}
	c.unlink(i)
	if c.trackEvictions {
		c.evicted = append(c.evicted, c.nodes[i].key)
	}
	c.m.del(c.nodes[i].key)
	c.used -= int(c.nodes[i].tokens)
	c.nodes[i].tokens = 0 // freed: no longer a valid lookup hint
	c.free = append(c.free, i)
}

// SyncBackup records that the KV of blocks (the prompt of a Direct turn of
// session s, streamed back from its decode worker: D→P incremental sync,
// spec §9 Q4) reached this worker: the blocks enter the prefix cache (they
// take its room) and become the session's backup, so a later Reseed
// re-prefills only what was appended since. A sync older than the backup
// changes nothing.
func (w *PrefillWorker) SyncBackup(s int32, blocks []uint64, blockTokens int) {
	if w.snap == nil {
		w.snap = make(map[int32]int)
	}
	if n, ok := w.snap[s]; ok && n >= len(blocks) {
		return
	}
	w.cache.Insert(blocks, blockTokens)
	w.snap[s] = len(blocks)
}

// BackupTokens is the tokens of every session's backup (their sum; shared
// prefixes are counted once per session).
func (w *PrefillWorker) BackupTokens(blockTokens int) int {
	n := 0
	for _, b := range w.snap {
		n += b * blockTokens
	}
	return n
}

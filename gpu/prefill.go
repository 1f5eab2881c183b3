package gpu

import (
	"fmt"
	"time"
)

// PrefillConfig configures a prefill worker.
type PrefillConfig struct {
	Name           string
	CacheTokens    int // prefix cache capacity in tokens (0 = no cache)
	MaxBatchTokens int // new tokens per batch (a single larger request runs alone)
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
}

// NewPrefillWorker validates cfg.
func NewPrefillWorker(cfg PrefillConfig, cost Cost) (*PrefillWorker, error) {
	if cfg.CacheTokens < 0 || cost == nil {
		return nil, fmt.Errorf("gpu: prefill worker %q needs cache_tokens >= 0 and a cost model", cfg.Name)
	}
	if cfg.MaxBatchTokens <= 0 {
		cfg.MaxBatchTokens = 16384
	}
	return &PrefillWorker{cfg: cfg, cost: cost, cache: NewBlockLRU(cfg.CacheTokens)}, nil
}

// Queued is the number of jobs waiting; Running the number in the batch.
func (w *PrefillWorker) Queued() int  { return len(w.queue) }
func (w *PrefillWorker) Running() int { return len(w.batch) }

// CacheUsed is the prefix cache occupancy in tokens.
func (w *PrefillWorker) CacheUsed() int { return w.cache.Used() }

// Submit queues j for prefill.
func (w *PrefillWorker) Submit(now time.Duration, j *Job) {
	w.advance(now)
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
		cached := min(w.cache.Match(r.Blocks)*r.BlockTokens, r.InputLen-1)
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
	w.queue = w.queue[n:]
	w.batchEnd = now + w.cost.StepTime(pass)
}

func (w *PrefillWorker) advance(now time.Duration) {
	for len(w.batch) > 0 && w.batchEnd <= now {
		t := w.batchEnd
		for _, j := range w.batch {
			j.PrefillEnd = t
			w.cache.Insert(j.Req.Blocks, j.Req.BlockTokens)
			w.done = append(w.done, j)
		}
		clear(w.batch)
		w.batch = w.batch[:0]
		w.start(t)
	}
}

// Advance runs the worker to now and returns the jobs whose prefill ended
// (in completion order; the slice is reused by the next call).
func (w *PrefillWorker) Advance(now time.Duration) []*Job {
	w.advance(now)
	d := w.done
	w.done = w.done[:0]
	return d
}

// NextEvent is when the current batch ends.
func (w *PrefillWorker) NextEvent() (time.Duration, bool) {
	if len(w.batch) == 0 {
		return 0, false
	}
	return w.batchEnd, true
}

// BlockLRU is a prefix cache of block hashes with an LRU replacement policy
// and a capacity in tokens.
type BlockLRU struct {
	capTokens int
	used      int
	m         map[uint64]*lruNode
	head      lruNode // sentinel: head.next is most recent
}

type lruNode struct {
	key        uint64
	tokens     int
	prev, next *lruNode
}

// NewBlockLRU returns a cache holding at most capTokens tokens.
func NewBlockLRU(capTokens int) *BlockLRU {
	c := &BlockLRU{capTokens: capTokens, m: make(map[uint64]*lruNode)}
	c.head.next, c.head.prev = &c.head, &c.head
	return c
}

// Used is the cached tokens.
func (c *BlockLRU) Used() int { return c.used }

// Match returns how many leading blocks are cached, touching them.
func (c *BlockLRU) Match(blocks []uint64) int {
	n := 0
	for _, b := range blocks {
		e := c.m[b]
		if e == nil {
			break
		}
		c.touch(e)
		n++
	}
	return n
}

// Insert caches blocks (each of blockTokens tokens), evicting LRU blocks.
func (c *BlockLRU) Insert(blocks []uint64, blockTokens int) {
	if c.capTokens <= 0 || blockTokens <= 0 {
		return
	}
	for _, b := range blocks {
		if e := c.m[b]; e != nil {
			c.touch(e)
			continue
		}
		if blockTokens > c.capTokens {
			return
		}
		for c.used+blockTokens > c.capTokens {
			c.evictOldest()
		}
		e := &lruNode{key: b, tokens: blockTokens}
		c.m[b] = e
		c.used += blockTokens
		c.pushFront(e)
	}
}

func (c *BlockLRU) touch(e *lruNode) {
	e.prev.next, e.next.prev = e.next, e.prev
	c.pushFront(e)
}

func (c *BlockLRU) pushFront(e *lruNode) {
	e.prev, e.next = &c.head, c.head.next
	c.head.next.prev = e
	c.head.next = e
}

func (c *BlockLRU) evictOldest() {
	e := c.head.prev
	if e == &c.head {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	delete(c.m, e.key)
	c.used -= e.tokens
}

package gpu

import (
	"time"

	"github.com/pdemu/pdemu/policy"
)

// FusedConfig configures a fused (prefill + decode on one GPU) worker, the
// instance of data-parallel and bucketed deployments.
type FusedConfig struct {
	Name        string
	Budget      int     // KV pool in tokens (running requests and prefix cache)
	Rho         float64 // admission high-water mark of running requests' KV
	MaxRunning  int
	ChunkTokens int // chunked-prefill size
}

// FusedWorker is a fused worker: requests queue FIFO for KV memory (their
// prompt and output, at most ρ·K in total), then prefill the part of the
// prompt not found in the worker's block-LRU prefix cache as chunked
// prefill mixed with the running decodes, then decode. The prefix cache
// (capacity K tokens) keeps prompts after their requests end, so a later
// request of the same session (or sharing a prefix) prefills only its new
// tokens. Evicted cache blocks are reported (EvBlocksEvicted) so routers'
// meta-stores can follow.
//
// It reuses the decode worker's batching (mixed passes, analytic decode);
// see DecodeWorker for the timing model.
type FusedWorker struct {
	d       *DecodeWorker
	cache   *BlockLRU
	waitMem []*Job
}

// NewFusedWorker validates cfg.
func NewFusedWorker(cfg FusedConfig, cost Cost) (*FusedWorker, error) {
	d, err := NewDecodeWorker(DecodeConfig{
		Name: cfg.Name, Budget: cfg.Budget, Rho: cfg.Rho, MaxRunning: cfg.MaxRunning, ChunkTokens: cfg.ChunkTokens,
	}, cost)
	if err != nil {
		return nil, err
	}
	f := &FusedWorker{d: d, cache: NewBlockLRU(cfg.Budget)}
	f.cache.trackEvictions = true
	d.afterFinish = f.admit
	return f, nil
}

// Used, Cap, MaxUsed, Running: as DecodeWorker (KV of admitted requests).
func (f *FusedWorker) Used() int    { return f.d.Used() }
func (f *FusedWorker) Cap() int     { return f.d.Cap() }
func (f *FusedWorker) MaxUsed() int { return f.d.MaxUsed() }
func (f *FusedWorker) Running() int { return f.d.Running() }

// Queued counts requests waiting for memory, prefill or a batch slot.
func (f *FusedWorker) Queued() int { return len(f.waitMem) + f.d.Queued() }

// QueuedPrefillTokens is the prefill work not finished yet (tokens),
// including the pass in flight.
func (f *FusedWorker) QueuedPrefillTokens() int64 {
	var n int64
	for _, j := range f.waitMem {
		n += int64(j.PrefillTokens)
	}
	for _, j := range f.d.prefillQ {
		n += int64(j.PrefillTokens)
	}
	if j := f.d.cur; j != nil {
		n += int64(j.PrefillTokens - j.chunkDone)
	}
	return n
}

// CachedPrefix is how many leading blocks of blocks the prefix cache holds
// (a read: it does not touch the LRU order).
func (f *FusedWorker) CachedPrefix(blocks []uint64) int { return f.cache.Peek(blocks) }

// CacheUsed is the prefix cache occupancy in tokens.
func (f *FusedWorker) CacheUsed() int { return f.cache.Used() }

// Import puts blocks (fetched from another instance) into the prefix
// cache, as if this worker had computed them.
func (f *FusedWorker) Import(blocks []uint64, blockTokens int) { f.cache.Insert(blocks, blockTokens) }

// Submit queues j. Its cached prefix is looked up now; it is admitted when
// its KV fits, or fails at once (ReasonExceedsPool) if it never can.
func (f *FusedWorker) Submit(now time.Duration, j *Job) {
	f.d.advance(now)
	r := j.Req
	cached := max(0, min(f.cache.Match(r.Blocks)*r.BlockTokens, r.InputLen-1))
	j.Mode = policy.ModeFused
	j.Admitted = now
	j.CachedTokens, j.PrefillTokens = cached, r.InputLen-cached
	j.footprint = r.InputLen + r.OutputLen
	if j.footprint > f.d.cap {
		j.Failed, j.Done = ReasonExceedsPool, now
		f.d.out = append(f.d.out, Event{Kind: EvFailed, Job: j, At: now})
		return
	}
	f.waitMem = append(f.waitMem, j)
	f.admit(now)
}

// admit moves waiting requests (FIFO) into prefill while their KV fits.
func (f *FusedWorker) admit(now time.Duration) {
	for len(f.waitMem) > 0 {
		j := f.waitMem[0]
		if f.d.used+j.footprint > f.d.cap {
			return
		}
		f.waitMem = f.waitMem[1:]
		f.d.setUsed(f.d.used + j.footprint)
		j.reserved = true
		f.cache.Insert(j.Req.Blocks, j.Req.BlockTokens)
		f.d.prefillQ = append(f.d.prefillQ, j)
		f.d.kick(now)
	}
}

// Advance runs the worker to now (requests waiting for memory are admitted
// at the instant a completion frees it).
func (f *FusedWorker) Advance(now time.Duration) { f.d.advance(now) }

// Events returns and clears what happened since the last call; evicted
// cache blocks come as one EvBlocksEvicted event.
func (f *FusedWorker) Events() []Event {
	ev := f.d.Events()
	if keys := f.cache.takeEvicted(); len(keys) > 0 {
		ev = append(ev, Event{Kind: EvBlocksEvicted, Blocks: keys})
	}
	return ev
}

// NextEvent is when Advance must be called next.
func (f *FusedWorker) NextEvent() (time.Duration, bool) { return f.d.NextEvent() }

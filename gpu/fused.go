package gpu

import (
	"fmt"
	"math"
	"time"

	"github.com/pdemu/pdemu/effect"
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

	// DRAMTokens > 0 adds a DRAM (L1) tier below the HBM prefix cache:
	// blocks evicted from HBM move there (the tiers are exclusive), and a
	// prefix found there is loaded back at DRAMBandwidth bytes/s, which
	// delays the request's prefill by tokens·KVBytesPerToken/DRAMBandwidth.
	DRAMTokens      int
	DRAMBandwidth   float64
	KVBytesPerToken int64

	// SeparateCache gives the prefix cache a pool of its own of Budget
	// tokens beside the running requests' KV (pdemu before issue 10).
	// false (default): SGLang's single pool — the radix cache holds the
	// running requests' prompts, and their output KV comes out of the same
	// Budget tokens, so the cache's capacity is Budget minus the output
	// tokens reserved by the requests in flight (LRU blocks are evicted as
	// it shrinks).
	SeparateCache bool
	// TrackCache records every change of the blocks the worker holds (HBM
	// and DRAM tiers together): TakeCacheChanges (fleet's KV events).
	TrackCache bool
	// EvictedCountOnly: EvBlocksEvicted events say how many tokens left
	// (Tokens) but not which blocks (Blocks is nil), for a router that
	// ignores them (cache_aware_dp): copying every evicted hash out of the
	// cache was ~8% of agentic dp4's CPU for nothing. It has no effect with
	// a DRAM tier or TrackCache, which need the hashes.
	EvictedCountOnly bool
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
	cache   *BlockLRU // HBM (L0) prefix cache
	waitMem []*Job

	l1       *BlockLRU // DRAM tier, nil when none
	loadRate float64   // bytes/s from the DRAM tier
	kvBytes  int64
	loading  []*Job   // admitted requests waiting for their DRAM load
	evicted  []uint64 // blocks that left the worker, for the meta-store

	budget   int
	separate bool
	lastBT   int    // block size of the last insert
	active   []*Job // admitted requests not yet known to have ended (shared pool)
	track    bool
	changes  []CacheChange

	countOnly bool // EvictedCountOnly in effect: f.evicted stays empty
	evSeen    int  // f.cache.evictions already reported (countOnly)
}

// NewFusedWorker validates cfg.
func NewFusedWorker(cfg FusedConfig, cost Cost) (*FusedWorker, error) {
	d, err := NewDecodeWorker(DecodeConfig{
		Name: cfg.Name, Budget: cfg.Budget, Rho: cfg.Rho, MaxRunning: cfg.MaxRunning, ChunkTokens: cfg.ChunkTokens,
	}, cost)
	if err != nil {
		return nil, err
	}
	f := &FusedWorker{d: d, cache: NewBlockLRU(cfg.Budget), budget: cfg.Budget, separate: cfg.SeparateCache, track: cfg.TrackCache}
	f.countOnly = cfg.EvictedCountOnly && cfg.DRAMTokens <= 0 && !cfg.TrackCache
	f.cache.trackEvictions = !f.countOnly
	if cfg.DRAMTokens > 0 {
		if !(cfg.DRAMBandwidth > 0) || cfg.KVBytesPerToken <= 0 {
			return nil, fmt.Errorf("gpu: fused worker %q: a DRAM tier needs a bandwidth and the KV bytes per token", cfg.Name)
		}
		f.l1 = NewBlockLRU(cfg.DRAMTokens)
		f.l1.trackEvictions = true
		f.loadRate, f.kvBytes = cfg.DRAMBandwidth, cfg.KVBytesPerToken
	}
	d.afterFinish = f.admit
	return f, nil
}

// Used, Cap, MaxUsed, Running: as DecodeWorker (KV of admitted requests).
func (f *FusedWorker) Used() int    { return f.d.Used() }
func (f *FusedWorker) Cap() int     { return f.d.Cap() }
func (f *FusedWorker) MaxUsed() int { return f.d.MaxUsed() }
func (f *FusedWorker) Running() int { return f.d.Running() }

// Queued counts requests waiting for memory, a DRAM load, prefill or a
// batch slot.
func (f *FusedWorker) Queued() int { return len(f.waitMem) + len(f.loading) + f.d.Queued() }

// QueuedPrefillTokens is the prefill work not finished yet (tokens),
// including the pass in flight.
func (f *FusedWorker) QueuedPrefillTokens() int64 {
	var n int64
	for _, j := range f.waitMem {
		n += int64(j.PrefillTokens)
	}
	for _, j := range f.loading {
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

// CachedPrefix is how many leading blocks of blocks the worker holds, in
// HBM and then (continuing the prefix) in the DRAM tier (a read: it does
// not touch the LRU order).
func (f *FusedWorker) CachedPrefix(blocks []uint64) int {
	n := f.cache.Peek(blocks)
	if f.l1 != nil {
		n += f.l1.Peek(blocks[n:])
	}
	return n
}

// CacheUsed is the prefix cache occupancy in tokens.
func (f *FusedWorker) CacheUsed() int { return f.cache.Used() }

// Import puts blocks (fetched from another instance) into the prefix
// cache, as if this worker had computed them.
func (f *FusedWorker) Import(blocks []uint64, blockTokens int) { f.insert(blocks, blockTokens) }

// resize sets the shared pool's cache capacity to Budget minus the output
// KV of the requests in flight, evicting LRU blocks beyond it.
func (f *FusedWorker) resize() {
	if f.separate {
		return
	}
	out := 0
	kept := f.active[:0]
	for _, j := range f.active {
		if j.Done > 0 || j.Failed != "" {
			continue
		}
		kept = append(kept, j)
		out += j.Req.OutputLen
	}
	clear(f.active[len(kept):])
	f.active = kept
	c := f.cache
	capTokens := max(0, f.budget-out)
	if c.used <= capTokens {
		c.capTokens = capTokens
		return
	}
	n := len(f.evicted)
	if f.l1 == nil {
		f.direct(func() { c.setCap(capTokens) })
	} else {
		c.setCap(capTokens)
		f.spill(c.evictedSince(), 0)
	}
	if f.track && len(f.evicted) > n {
		f.changes = append(f.changes, CacheChange{At: f.d.last, Removed: append([]uint64(nil), f.evicted[n:]...)})
	}
}

// spill moves blocks evicted from HBM to the DRAM tier, or out of the
// worker when there is none.
func (f *FusedWorker) spill(out []uint64, blockTokens int) {
	if len(out) == 0 {
		return
	}
	if f.l1 == nil {
		f.evicted = append(f.evicted, out...)
		return
	}
	if blockTokens == 0 {
		// resize: DRAM blocks carry the HBM block size of their chain; the
		// tier only needs a size, and every block of a worker has one.
		blockTokens = f.lastBT
	}
	f.l1.Insert(out, blockTokens)
	f.evicted = append(f.evicted, f.l1.evictedSince()...)
}

// direct runs op on the HBM cache with its evictions appended straight to
// f.evicted (without a DRAM tier they leave the worker): copying them
// there, into a fresh slice per Ready, was 12% of agentic dp4's CPU.
func (f *FusedWorker) direct(op func()) {
	f.cache.evicted = f.evicted
	op()
	f.evicted, f.cache.evicted = f.cache.evicted, nil
}

// insert puts blocks in HBM; what HBM evicts moves to the DRAM tier (or
// leaves the worker when there is none), and blocks now in HBM leave DRAM.
func (f *FusedWorker) insert(blocks []uint64, blockTokens int) {
	f.lastBT = blockTokens
	n := len(f.evicted)
	if f.l1 == nil {
		f.direct(func() { f.cache.Insert(blocks, blockTokens) })
	} else {
		f.cache.Insert(blocks, blockTokens)
		out := f.cache.evictedSince()
		f.l1.removeAll(blocks)
		f.spill(out, blockTokens)
	}
	if f.track {
		f.changes = append(f.changes, CacheChange{At: f.d.last, Stored: blocks, Removed: append([]uint64(nil), f.evicted[n:]...)})
	}
}

// Submit queues j. Its cached prefix is looked up now; it is admitted when
// its KV fits, or fails at once (ReasonExceedsPool) if it never can.
func (f *FusedWorker) Submit(now time.Duration, j *Job) {
	f.d.advance(now)
	r := j.Req
	hbm := f.cache.Match(r.Blocks)
	dram := 0
	if f.l1 != nil {
		dram = f.l1.Peek(r.Blocks[hbm:])
	}
	cached := max(0, min((hbm+dram)*r.BlockTokens, r.InputLen-1))
	j.loadTokens = max(0, cached-hbm*r.BlockTokens)
	j.Mode = policy.ModeFused
	j.Admitted, j.DGot = now, now
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
	f.resize()
	for len(f.waitMem) > 0 {
		j := f.waitMem[0]
		if f.d.used+j.footprint > f.d.cap {
			return
		}
		f.waitMem = f.waitMem[1:]
		f.d.setUsed(f.d.used + j.footprint)
		j.reserved, j.KVReserved = true, now
		if !f.separate {
			f.active = append(f.active, j)
			f.resize()
		}
		f.insert(j.Req.Blocks, j.Req.BlockTokens)
		if j.loadTokens > 0 {
			// Its DRAM-resident prefix comes back over PCIe first.
			sec := float64(int64(j.loadTokens)*f.kvBytes) / f.loadRate
			j.loadUntil = now + time.Duration(math.Ceil(sec*1e9))
			f.loading = append(f.loading, j)
			continue
		}
		f.d.prefillQ = append(f.d.prefillQ, j)
		f.d.kick(now)
	}
}

// nextLoad is the earliest DRAM load to finish, or -1.
func (f *FusedWorker) nextLoad() int {
	best := -1
	for i, j := range f.loading {
		if best < 0 || j.loadUntil < f.loading[best].loadUntil {
			best = i
		}
	}
	return best
}

// Advance runs the worker to now (requests waiting for memory are admitted
// at the instant a completion frees it; a DRAM load that ends hands its
// request to prefill at that instant).
func (f *FusedWorker) Advance(now time.Duration) {
	for {
		i := f.nextLoad()
		if i < 0 || f.loading[i].loadUntil > now {
			f.d.advance(now)
			return
		}
		j := f.loading[i]
		f.loading = append(f.loading[:i], f.loading[i+1:]...)
		f.d.advance(j.loadUntil)
		f.d.prefillQ = append(f.d.prefillQ, j)
		f.d.kick(j.loadUntil)
	}
}

// Ready returns and clears what happened since the last call, with
// NextEvent as its wake-up; evicted cache blocks come as one
// EvBlocksEvicted event. Out and that event's Blocks are reused: consume
// them before the next call.
func (f *FusedWorker) Ready() effect.Ready[Event] {
	at, ok := f.NextEvent()
	n := len(f.evicted)
	if f.countOnly {
		n, f.evSeen = f.cache.evictions-f.evSeen, f.cache.evictions
	}
	if n > 0 {
		f.d.out = append(f.d.out, Event{Kind: EvBlocksEvicted, Blocks: f.evicted, At: f.d.last,
			Tokens: n * f.lastBT, Cause: EvictPrefixCache, For: -1})
		f.evicted = f.evicted[:0]
	}
	return effect.Take(&f.d.out, at, ok)
}

// NextEvent is when Advance must be called next.
func (f *FusedWorker) NextEvent() (time.Duration, bool) {
	at, ok := f.d.NextEvent()
	if i := f.nextLoad(); i >= 0 && (!ok || f.loading[i].loadUntil < at) {
		return f.loading[i].loadUntil, true
	}
	return at, ok
}

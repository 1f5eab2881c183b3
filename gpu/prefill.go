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

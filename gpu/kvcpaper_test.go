package gpu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/policy"
)

// TestSpecAppendLen: Algorithm 2's τ_append test uses the spec's append_len
// (new tokens since the session's previous turn), not the gap to what this
// worker last saw of the session; the append-prefill still computes that gap.
func TestSpecAppendLen(t *testing.T) {
	for _, resident := range []bool{false, true} {
		w, err := NewDecodeWorker(DecodeConfig{Name: "d0", Budget: 10000, Rho: 1, TauAppend: 100, ReserveOutput: true,
			NetCapacity: true, ResidentAppend: resident}, linearCost{})
		require.NoError(t, err)
		j0 := &Job{Req: req(0, 1, 0, 200, 1)}
		mode, _ := w.Admit(0, j0)
		require.Equal(t, policy.ModeSeed, mode)
		w.Arrive(time.Millisecond, j0)
		w.Advance(time.Second)
		w.Ready()
		// Turns 1 and 2 went elsewhere (a Fallback): this worker still holds
		// 201 tokens. Turn 3 appends 50 tokens to turn 2 but is 400 tokens
		// past what this worker holds.
		r := req(3, 1, 3, 600, 1)
		r.AppendLen = 50
		j := &Job{Req: r}
		mode, reason := w.Admit(2*time.Second, j)
		if resident {
			assert.Equal(t, policy.ModeNone, mode)
			assert.Equal(t, "real-large-append", reason)
		} else {
			assert.Equal(t, policy.ModeDirect, mode, "spec append_len 50 <= τ_append 100")
			assert.Equal(t, 600-201, j.PrefillTokens, "the append-prefill covers the stale gap")
		}
	}
}

// TestSnapshotBackup: with SnapshotBackup a Reseed reuses only the
// session's seed-time snapshot on P, even though P's prefix cache holds a
// later Fallback prompt; without it the cache serves the Fallback's blocks.
func TestSnapshotBackup(t *testing.T) {
	for _, snap := range []bool{false, true} {
		w, err := NewPrefillWorker(PrefillConfig{Name: "p", CacheTokens: 100000, MaxBatchTokens: 100000, SnapshotBackup: snap}, linearCost{})
		require.NoError(t, err)
		run := func(j *Job, at time.Duration) {
			w.Submit(at, j)
			w.Advance(at + time.Hour)
		}
		run(&Job{Req: req(0, 1, 0, 200, 1), Mode: policy.ModeSeed}, 0)               // snapshot: 20 blocks
		run(&Job{Req: req(1, 1, 5, 500, 1), Mode: policy.ModeFallback}, 2*time.Hour) // cache holds 50 blocks
		j := &Job{Req: req(2, 1, 6, 600, 1), Mode: policy.ModeReseed}
		run(j, 4*time.Hour)
		if snap {
			assert.Equal(t, 200, j.CachedTokens, "only the seed-time snapshot")
			assert.Equal(t, 400, j.PrefillTokens)
		} else {
			assert.Equal(t, 500, j.CachedTokens)
		}
		// The Reseed refreshed the snapshot: the same prompt again is all
		// cached (but its last token).
		j2 := &Job{Req: req(3, 1, 7, 600, 1), Mode: policy.ModeReseed}
		run(j2, 6*time.Hour)
		assert.Equal(t, 599, j2.CachedTokens)
	}
}

// TestFusedSharedPool: in SGLang's single pool the output KV of requests in
// flight comes out of the prefix cache's room; with SeparateCache it does not.
func TestFusedSharedPool(t *testing.T) {
	for _, separate := range []bool{false, true} {
		f, err := NewFusedWorker(FusedConfig{Name: "w", Budget: 1000, Rho: 1, SeparateCache: separate}, linearCost{})
		require.NoError(t, err)
		j0 := &Job{Req: req(0, 1, 0, 500, 1)}
		f.Submit(0, j0)
		f.Advance(time.Hour)
		f.Ready()
		require.Equal(t, 50, f.CachedPrefix(j0.Req.Blocks))
		// A request with a long output: 100 prompt + 600 output tokens.
		j1 := &Job{Req: req(1, 2, 0, 100, 600)}
		f.Submit(2*time.Hour, j1)
		if separate {
			assert.Equal(t, 50, f.CachedPrefix(j0.Req.Blocks), "separate cache keeps session 1")
			continue
		}
		assert.LessOrEqual(t, f.CacheUsed(), 1000-600, "cache + output reservations fit the pool")
		assert.Less(t, f.CachedPrefix(j0.Req.Blocks), 50, "session 1's prefix lost room to the output")
		// Once the request ends the room comes back (the blocks do not).
		f.Advance(3 * time.Hour)
		f.Ready()
		j2 := &Job{Req: req(2, 3, 0, 800, 1)}
		f.Submit(4*time.Hour, j2)
		f.Advance(5 * time.Hour)
		assert.Equal(t, 80, f.CachedPrefix(j2.Req.Blocks))
	}
}

// TestSyncBackup: a D→P sync advances the session's backup (and a stale
// one does not move it back); with FallbackRefresh a Fallback's prefill
// refreshes the backup too.
func TestSyncBackup(t *testing.T) {
	w, err := NewPrefillWorker(PrefillConfig{Name: "p", CacheTokens: 100000, MaxBatchTokens: 100000, SnapshotBackup: true, FallbackRefresh: true}, linearCost{})
	require.NoError(t, err)
	run := func(j *Job, at time.Duration) {
		w.Submit(at, j)
		w.Advance(at + time.Hour)
	}
	run(&Job{Req: req(0, 1, 0, 200, 1), Mode: policy.ModeSeed}, 0)
	w.SyncBackup(1, req(1, 1, 3, 400, 1).Blocks, 10)
	w.SyncBackup(1, req(1, 1, 2, 300, 1).Blocks, 10) // older: ignored
	assert.Equal(t, 400, w.BackupTokens(10))
	j := &Job{Req: req(2, 1, 4, 450, 1), Mode: policy.ModeReseed}
	run(j, 2*time.Hour)
	assert.Equal(t, 400, j.CachedTokens, "the synced backup serves the reseed")
	run(&Job{Req: req(3, 1, 5, 700, 1), Mode: policy.ModeFallback}, 4*time.Hour)
	assert.Equal(t, 700, w.BackupTokens(10), "the Fallback refreshed the backup")
}

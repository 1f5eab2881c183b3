package gpu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/workload"
)

// linearCost is a transparent cost model for exact timing assertions:
// prefill 1µs per new token, decode step 1ms + 1µs per sequence.
type linearCost struct{}

func (linearCost) PrefillTime(n, _ int) time.Duration { return time.Duration(n) * time.Microsecond }
func (linearCost) DecodeStepTime(b int, _ int64) time.Duration {
	return time.Millisecond + time.Duration(b)*time.Microsecond
}
func (c linearCost) StepTime(p Pass) time.Duration {
	return time.Duration(p.PrefillTokens) * time.Microsecond
}

func blocks(session int32, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(session)<<32 | uint64(i+1)
	}
	return out
}

func req(id int64, s int32, turn, in, out int) *workload.Request {
	return &workload.Request{ID: id, Session: s, Turn: turn, InputLen: in, OutputLen: out,
		BlockTokens: 10, Blocks: blocks(s, in/10), AppendLen: in}
}

func newDecode(t *testing.T, budget int) *DecodeWorker {
	t.Helper()
	w, err := NewDecodeWorker(DecodeConfig{Name: "d0", Budget: budget, Rho: 1, TauAppend: 100, ReserveOutput: true, NetCapacity: true, ResidentAppend: true}, linearCost{})
	require.NoError(t, err)
	return w
}

func kinds(evs []Event) []EventKind {
	var out []EventKind
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

func TestDecodeAdmitModes(t *testing.T) {
	w := newDecode(t, 1000)
	// Turn 0 of a new session: Seed; its KV arrives later.
	j0 := &Job{Req: req(0, 1, 0, 200, 3)}
	mode, reason := w.Admit(0, j0)
	assert.Equal(t, policy.ModeSeed, mode)
	assert.Empty(t, reason)
	assert.Equal(t, 203, w.Used(), "input + reserved output")
	w.Arrive(time.Millisecond, j0)
	w.Advance(time.Second)
	assert.Equal(t, []EventKind{EvFirstToken, EvDone}, kinds(w.Ready().Out))
	assert.Equal(t, time.Millisecond, j0.FirstToken)
	// Two decode steps of batch 1 after the first token.
	assert.Equal(t, time.Millisecond+2*(time.Millisecond+time.Microsecond), j0.Done)

	// Turn 1 appends 50 tokens to the 203-token resident context: Direct.
	j1 := &Job{Req: req(1, 1, 1, 253, 2)}
	mode, _ = w.Admit(2*time.Second, j1)
	assert.Equal(t, policy.ModeDirect, mode)
	assert.Equal(t, 50, j1.PrefillTokens)
	assert.Equal(t, 203, j1.CachedTokens)
	w.Advance(3 * time.Second)
	assert.Equal(t, []EventKind{EvFirstToken, EvDone}, kinds(w.Ready().Out))
	assert.Equal(t, 2*time.Second+50*time.Microsecond, j1.FirstToken)

	// A large append is rejected before any eviction.
	mode, reason = w.Admit(4*time.Second, &Job{Req: req(2, 1, 2, 600, 2)})
	assert.Equal(t, policy.ModeNone, mode)
	assert.Equal(t, policy.ReasonLargeAppend, reason)

	// A non-resident session on turn 3: Reseed.
	mode, _ = w.Admit(4*time.Second, &Job{Req: req(3, 2, 3, 100, 1)})
	assert.Equal(t, policy.ModeReseed, mode)
}

func TestDecodeCapacityAndIdleEviction(t *testing.T) {
	w := newDecode(t, 1000)
	w.cfg.IdleEvictAfter = 10 * time.Second
	a := &Job{Req: req(0, 1, 0, 500, 1)}
	mode, _ := w.Admit(0, a)
	require.Equal(t, policy.ModeSeed, mode)
	w.Arrive(0, a) // output 1: done at its first token
	w.Advance(0)
	w.Ready()
	require.Equal(t, 501, w.Used())

	// Session 1 is idle but young: a 600-token newcomer does not fit.
	mode, reason := w.Admit(5*time.Second, &Job{Req: req(1, 2, 0, 600, 1)})
	assert.Equal(t, policy.ModeNone, mode)
	assert.Equal(t, policy.ReasonNotResident, reason)
	assert.True(t, w.Resident(1))

	// After 10 s of idleness it is evicted to make room.
	mode, _ = w.Admit(11*time.Second, &Job{Req: req(2, 2, 0, 600, 1)})
	assert.Equal(t, policy.ModeSeed, mode)
	assert.False(t, w.Resident(1))
	evs := w.Ready().Out
	require.Len(t, evs, 1)
	assert.Equal(t, EvEvicted, evs[0].Kind)
	assert.EqualValues(t, 1, evs[0].Session)
	assert.Equal(t, 601, w.Used())
}

func TestDecodeFallbackWaitsForRoomOrFails(t *testing.T) {
	w := newDecode(t, 1000)
	big := &Job{Req: req(0, 1, 0, 2000, 5), Mode: policy.ModeFallback}
	w.Arrive(0, big)
	evs := w.Ready().Out
	require.Len(t, evs, 1)
	assert.Equal(t, EvFailed, evs[0].Kind)
	assert.Equal(t, ReasonExceedsPool, big.Failed)

	// Two fallbacks of 600 tokens: the second waits until the first ends.
	f1 := &Job{Req: req(1, 2, 0, 590, 10), Mode: policy.ModeFallback}
	f2 := &Job{Req: req(2, 3, 0, 590, 10), Mode: policy.ModeFallback}
	w.Arrive(0, f1)
	w.Arrive(0, f2)
	assert.Equal(t, 1, w.Queued())
	at, ok := w.NextEvent()
	require.True(t, ok)
	w.Advance(at)
	assert.Equal(t, f1.Done, f2.FirstToken, "f2 starts when f1 frees its KV")
	assert.Equal(t, 600, w.Used())
	w.Advance(time.Minute)
	assert.Zero(t, w.Used(), "fallback KV is freed at completion")
}

func TestDecodeAppendPrefillRunsInMixedPass(t *testing.T) {
	w := newDecode(t, 10000)
	a := &Job{Req: req(0, 1, 0, 100, 101)}
	_, _ = w.Admit(0, a)
	w.Arrive(0, a)
	// Session 2 resident after a first turn, then a Direct turn arrives.
	b0 := &Job{Req: req(1, 2, 0, 100, 1)}
	_, _ = w.Admit(0, b0)
	w.Arrive(0, b0)
	w.Advance(0)
	w.Ready()
	b1 := &Job{Req: req(2, 2, 1, 191, 1)} // 90-token append
	mode, _ := w.Admit(10*time.Millisecond, b1)
	require.Equal(t, policy.ModeDirect, mode)
	w.Advance(time.Hour)
	// a needs 100 decode steps: 99 decode-only ones and one inside the
	// 90 µs mixed pass that also prefilled b1's append (linearCost costs a
	// pass by its prefill tokens only).
	step := time.Millisecond + time.Microsecond
	assert.InDelta(t, float64(99*step+90*time.Microsecond), float64(a.Done), float64(time.Microsecond))
	assert.Equal(t, 10*time.Millisecond+90*time.Microsecond, b1.FirstToken)
}

// TestDecodeNeverExceedsCap: invariant 1 under random admissions, arrivals
// and fallbacks, with output reservation on.
func TestDecodeNeverExceedsCap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w, err := NewDecodeWorker(DecodeConfig{Name: "d", Budget: rapid.IntRange(500, 5000).Draw(t, "budget"),
			Rho: 0.95, TauAppend: 300, ReserveOutput: true, NetCapacity: rapid.Bool().Draw(t, "net")}, linearCost{})
		require.NoError(t, err)
		now := time.Duration(0)
		turns := map[int32]int{}
		ctx := map[int32]int{}
		var pending []*Job
		for i := 0; i < 200; i++ {
			now += time.Duration(rapid.IntRange(0, 5000).Draw(t, "dt")) * time.Microsecond
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 4: // admission-free Direct
				s := int32(rapid.IntRange(0, 6).Draw(t, "s"))
				in := ctx[s] + rapid.IntRange(1, 400).Draw(t, "app")
				r := req(int64(i), s, turns[s], in, rapid.IntRange(1, 50).Draw(t, "out"))
				turns[s]++
				ctx[s] = in + r.OutputLen
				w.Run(now, &Job{Req: r})
			case 5: // admission-free Seed whose KV arrives
				s := int32(rapid.IntRange(7, 12).Draw(t, "s"))
				r := req(int64(i), s, 0, rapid.IntRange(1, 900).Draw(t, "in"), rapid.IntRange(1, 50).Draw(t, "out"))
				w.Arrive(now, &Job{Req: r, Mode: policy.ModeSeed, Unadmitted: true})
			case 0, 1:
				s := int32(rapid.IntRange(0, 6).Draw(t, "s"))
				in := ctx[s] + rapid.IntRange(1, 400).Draw(t, "app")
				r := req(int64(i), s, turns[s], in, rapid.IntRange(1, 50).Draw(t, "out"))
				j := &Job{Req: r}
				mode, _ := w.Admit(now, j)
				if mode != policy.ModeNone {
					turns[s]++
					ctx[s] = in + r.OutputLen
					if mode != policy.ModeDirect {
						pending = append(pending, j)
					}
				}
			case 2:
				if len(pending) > 0 {
					w.Arrive(now, pending[0])
					pending = pending[1:]
				}
			case 3:
				j := &Job{Req: req(int64(i), 100, 0, rapid.IntRange(1, 900).Draw(t, "fin"), 3), Mode: policy.ModeFallback}
				w.Arrive(now, j)
			}
			w.Advance(now)
			w.Ready()
			if w.Used() > w.Cap() {
				t.Fatalf("used %d > cap %d at step %d", w.Used(), w.Cap(), i)
			}
		}
		assert.LessOrEqual(t, w.MaxUsed(), w.Cap())
	})
}

func TestPrefillBatchesAndPrefixCache(t *testing.T) {
	w, err := NewPrefillWorker(PrefillConfig{Name: "p", CacheTokens: 10000, MaxBatchTokens: 300}, linearCost{})
	require.NoError(t, err)
	j1 := &Job{Req: req(0, 1, 0, 200, 1)}
	j2 := &Job{Req: req(1, 2, 0, 200, 1)}
	j3 := &Job{Req: req(2, 3, 0, 50, 1)}
	w.Submit(0, j1)
	w.Submit(0, j2)
	w.Submit(0, j3)
	// j1 runs alone (it started an empty worker); j2 and j3 fit together.
	assert.Equal(t, 1, w.Running())
	w.Advance(200 * time.Microsecond)
	done := w.Ready().Out
	require.Len(t, done, 1)
	assert.Equal(t, 2, w.Running())
	w.Advance(time.Second)
	done = w.Ready().Out
	require.Len(t, done, 2)
	assert.Equal(t, 450*time.Microsecond, j3.PrefillEnd)

	// Turn 1 of session 1 re-sends its 200 tokens: only the new 55 are computed.
	j4 := &Job{Req: req(3, 1, 1, 255, 1)}
	w.Submit(time.Second, j4)
	assert.Equal(t, 200, j4.CachedTokens)
	assert.Equal(t, 55, j4.PrefillTokens)
}

func TestBlockLRUEvictsLeastRecentlyUsed(t *testing.T) {
	c := NewBlockLRU(30)
	c.Insert([]uint64{1, 2, 3}, 10)
	assert.Equal(t, 3, c.Match([]uint64{1, 2, 3}))
	// A chain is evicted from its tail: 3 goes first.
	c.Insert([]uint64{4}, 10)
	assert.Equal(t, 2, c.Match([]uint64{1, 2, 3}))
	assert.Equal(t, 1, c.Match([]uint64{4}))
	// Now 2 is the least recent (4 was just touched, 1 before it).
	c.Insert([]uint64{5}, 10)
	assert.Equal(t, 1, c.Match([]uint64{1, 2}))
	assert.Equal(t, 30, c.Used())
	c.Insert([]uint64{6}, 40) // larger than the cache: ignored
	assert.Equal(t, 0, c.Match([]uint64{6}))
}

func TestDecodeFailedTransferReleasesReservation(t *testing.T) {
	w := newDecode(t, 1000)
	j := &Job{Req: req(0, 1, 0, 300, 5)}
	mode, _ := w.Admit(0, j)
	require.Equal(t, policy.ModeSeed, mode)
	require.Equal(t, 305, w.Used())
	j.Failed = "link: cut"
	w.Arrive(time.Millisecond, j)
	assert.Equal(t, []EventKind{EvEvicted, EvFailed}, kinds(w.Ready().Out))
	assert.Zero(t, w.Used())
	assert.False(t, w.Resident(1))
	assert.Zero(t, w.Running())

	f := &Job{Req: req(1, 2, 0, 300, 5), Mode: policy.ModeFallback, Failed: "link: cut"}
	w.Arrive(time.Millisecond, f)
	assert.Equal(t, []EventKind{EvFailed}, kinds(w.Ready().Out))
	assert.Zero(t, w.Used())
}

// TestDecodeFailedTransferLetsWaitingFallbackIn: a Fallback waiting for
// memory held by a Seed's reservation goes in when that Seed's transfer
// fails and frees the reservation. It used to wait for a finish that, on
// a worker with nothing running, never came: the request was never ended
// (chaos run: 150 requests released, 147 ended).
func TestDecodeFailedTransferLetsWaitingFallbackIn(t *testing.T) {
	w := newDecode(t, 1000)
	seed := &Job{Req: req(0, 1, 0, 600, 5)}
	mode, _ := w.Admit(0, seed)
	require.Equal(t, policy.ModeSeed, mode)
	fb := &Job{Req: req(1, 2, 0, 590, 10), Mode: policy.ModeFallback}
	w.Arrive(time.Millisecond, fb)
	require.Equal(t, 1, w.Queued(), "the fallback waits for the reservation's memory")
	w.Ready()
	seed.Failed = "link: cut"
	w.Arrive(2*time.Millisecond, seed)
	assert.Equal(t, []EventKind{EvEvicted, EvFailed, EvFirstToken}, kinds(w.Ready().Out))
	assert.Equal(t, 2*time.Millisecond, fb.FirstToken)
	w.Advance(time.Minute)
	assert.Equal(t, []EventKind{EvDone}, kinds(w.Ready().Out))
	assert.Zero(t, w.Used())
}

// passCost charges 10 µs per forward pass on top of linearCost, so the
// number of passes shows in the timings.
type passCost struct{ linearCost }

func (passCost) StepTime(p Pass) time.Duration {
	return 10*time.Microsecond + time.Duration(p.PrefillTokens)*time.Microsecond
}

func TestDecodeChunkedPrefill(t *testing.T) {
	w, err := NewDecodeWorker(DecodeConfig{Name: "d", Budget: 100000, Rho: 1, TauAppend: 10000, ChunkTokens: 100}, passCost{})
	require.NoError(t, err)
	j0 := &Job{Req: req(0, 1, 0, 100, 1)}
	_, _ = w.Admit(0, j0)
	w.Arrive(0, j0)
	w.Advance(0)
	w.Ready()
	j1 := &Job{Req: req(1, 1, 1, 351, 1)} // 250-token append: chunks of 100, 100, 50
	mode, _ := w.Admit(time.Second, j1)
	require.Equal(t, policy.ModeDirect, mode)
	assert.Equal(t, 250, j1.PrefillTokens)
	w.Advance(time.Hour)
	// Three passes (100, 100, 50 tokens), each with its 10 µs overhead.
	assert.Equal(t, time.Second+280*time.Microsecond, j1.FirstToken)
}

func TestFusedWorkerPrefixCacheAndMemoryQueue(t *testing.T) {
	f, err := NewFusedWorker(FusedConfig{Name: "f", Budget: 2000, Rho: 0.5, ChunkTokens: 1000}, linearCost{})
	require.NoError(t, err)
	a := &Job{Req: req(0, 1, 0, 500, 3)}
	b := &Job{Req: req(1, 2, 0, 450, 3)}
	c := &Job{Req: req(2, 3, 0, 100, 2)}
	f.Submit(0, a)
	f.Submit(0, b) // 503 + 453 fits
	f.Submit(0, c) // 102 more does not: waits for memory
	assert.Equal(t, 1, len(f.waitMem))
	assert.Equal(t, int64(500+450+100), f.QueuedPrefillTokens(), "a prefilling, b queued behind it, c waiting for memory")
	f.Advance(time.Hour)
	evs := f.Ready().Out
	assert.Equal(t, policy.ModeFused, c.Mode)
	assert.GreaterOrEqual(t, c.PrefillStart, a.Done, "c is admitted when a frees its KV")
	assert.Zero(t, f.Used())
	for _, e := range evs {
		assert.NotEqual(t, EvFailed, e.Kind)
	}
	// The next turn of session 1 re-sends a's prompt: only the append is prefilled.
	a1 := &Job{Req: req(3, 1, 1, 530, 1)}
	f.Submit(2*time.Hour, a1)
	assert.Equal(t, 500, a1.CachedTokens)
	assert.Equal(t, 30, a1.PrefillTokens)
	// A request larger than the pool fails at once.
	big := &Job{Req: req(4, 9, 0, 1200, 1)}
	f.Submit(2*time.Hour, big)
	assert.Equal(t, ReasonExceedsPool, big.Failed)
}

func TestFusedWorkerReportsCacheEvictions(t *testing.T) {
	f, err := NewFusedWorker(FusedConfig{Name: "f", Budget: 300, Rho: 1}, linearCost{})
	require.NoError(t, err)
	f.Submit(0, &Job{Req: req(0, 1, 0, 200, 1)})
	f.Advance(time.Second)
	f.Ready()
	f.Submit(time.Second, &Job{Req: req(1, 2, 0, 200, 1)})
	f.Advance(2 * time.Second)
	var evicted []uint64
	for _, e := range f.Ready().Out {
		if e.Kind == EvBlocksEvicted {
			evicted = append(evicted, e.Blocks...)
		}
	}
	require.NotEmpty(t, evicted)
	assert.Equal(t, 20-len(evicted), f.CachedPrefix(blocks(1, 20)), "session 1's chain is trimmed from its tail")
}

func TestDecodeUnadmittedRunAndSeed(t *testing.T) {
	w := newDecode(t, 1000)
	// An unadmitted Seed reserves its KV on arrival and stays resident.
	s0 := &Job{Req: req(0, 1, 0, 400, 1), Mode: policy.ModeSeed, Unadmitted: true}
	w.Arrive(0, s0)
	w.Advance(0)
	w.Ready()
	assert.True(t, w.Resident(1))
	assert.Equal(t, 401, w.Used())
	// Direct without admission over the resident prefix: only the append.
	d1 := &Job{Req: req(1, 1, 1, 450, 1)}
	w.Run(time.Second, d1)
	assert.Equal(t, 49, d1.PrefillTokens)
	// Direct for a session the worker never saw: the whole prompt.
	d2 := &Job{Req: req(2, 2, 3, 300, 1)}
	w.Run(time.Second, d2)
	assert.Equal(t, 300, d2.PrefillTokens)
	// One that does not fit waits for room, evicting idle sessions when
	// they become idle.
	d3 := &Job{Req: req(3, 3, 0, 500, 1)}
	w.Run(time.Second, d3)
	assert.Equal(t, 1, len(w.waitRoom))
	w.Advance(time.Hour)
	for _, e := range w.Ready().Out {
		assert.NotEqual(t, EvFailed, e.Kind)
	}
	assert.Positive(t, d3.Done)
	assert.LessOrEqual(t, w.MaxUsed(), w.Cap())
}

// TestBlockMapMatchesGoMap: the open-addressing map against a Go map under
// random puts and deletes (small consecutive keys, as trace hash ids are).
func TestBlockMapMatchesGoMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var m blockMap
		ref := map[uint64]int32{}
		for i := 0; i < 400; i++ {
			k := uint64(rapid.IntRange(0, 64).Draw(t, "k"))
			if rapid.Bool().Draw(t, "put") {
				v := int32(rapid.IntRange(1, 1000).Draw(t, "v"))
				m.put(k, v)
				ref[k] = v
			} else {
				m.del(k)
				delete(ref, k)
			}
			for q := uint64(0); q <= 64; q++ {
				if got, want := m.get(q), ref[q]; got != want {
					t.Fatalf("step %d: get(%d) = %d, want %d", i, q, got, want)
				}
			}
			if m.n != len(ref) {
				t.Fatalf("step %d: %d entries, want %d", i, m.n, len(ref))
			}
		}
	})
}

// TestFusedWorkerDRAMTier: blocks evicted from HBM move to the DRAM tier;
// a later request finds them there, waits for their load (not a
// recompute), and they leave DRAM when they are back in HBM.
func TestFusedWorkerDRAMTier(t *testing.T) {
	// HBM holds 300 tokens; DRAM 1000; loading costs 0.1 µs per token
	// (1000 B/token at 10 GB/s) against 1 µs per token to prefill.
	f, err := NewFusedWorker(FusedConfig{Name: "f", Budget: 300, Rho: 1, DRAMTokens: 1000, DRAMBandwidth: 10e9, KVBytesPerToken: 1000}, linearCost{})
	require.NoError(t, err)
	f.Submit(0, &Job{Req: req(0, 1, 0, 200, 1)})
	f.Advance(time.Second)
	f.Submit(time.Second, &Job{Req: req(1, 2, 0, 200, 1)})
	f.Advance(2 * time.Second)
	for _, e := range f.Ready().Out {
		assert.NotEqual(t, EvBlocksEvicted, e.Kind, "evicted HBM blocks stay on the worker, in DRAM")
	}
	assert.Equal(t, 20, f.CachedPrefix(blocks(1, 20)), "session 1 is still whole across HBM and DRAM")

	inHBM := f.cache.Peek(blocks(1, 20))
	j := &Job{Req: req(2, 1, 1, 250, 1)}
	f.Submit(3*time.Second, j)
	assert.Equal(t, 200, j.CachedTokens)
	assert.Equal(t, 50, j.PrefillTokens)
	loaded := 200 - inHBM*10
	require.Positive(t, loaded, "part of the prefix came from DRAM")
	f.Advance(time.Hour)
	load := time.Duration(loaded) * 100 * time.Nanosecond
	assert.Equal(t, 3*time.Second+load+50*time.Microsecond, j.FirstToken, "load, then prefill the 50 new tokens")
	assert.Zero(t, f.l1.Peek(blocks(1, 20)[inHBM:]), "blocks back in HBM left DRAM")
}

// An unadmitted Seed whose transfer failed never counted in its session's
// residency: it must not release it. It did (found by cluster's
// TestAbortsUnderFaults): the residency of a Direct request on the GPU was
// evicted under it, and a second such failure linked the session into the
// idle list twice (a nil dereference in linkIdle).
func TestDecodeFailedUnadmittedSeedLeavesResidency(t *testing.T) {
	w := newDecode(t, 100000)
	j0 := &Job{Req: req(0, 1, 0, 600, 5)}
	_, _ = w.Admit(0, j0)
	w.Arrive(0, j0)
	w.Advance(time.Second)
	w.Ready()
	j1 := &Job{Req: req(1, 1, 1, 700, 500)}
	mode, _ := w.Admit(time.Second, j1)
	require.Equal(t, policy.ModeDirect, mode)
	used := w.Used()
	seed := &Job{Req: req(2, 1, 0, 300, 5), Mode: policy.ModeSeed, Unadmitted: true, Failed: "link: cut"}
	w.Arrive(time.Second+time.Millisecond, seed)
	out := kinds(w.Ready().Out)
	assert.Contains(t, out, EvFailed)
	assert.NotContains(t, out, EvEvicted, "no eviction of the session j1 decodes in")
	assert.Equal(t, used, w.Used())
	w.Advance(time.Hour)
	assert.Contains(t, kinds(w.Ready().Out), EvDone)
	assert.Positive(t, w.Used(), "the session stays resident, idle")
}

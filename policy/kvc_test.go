package policy

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/workload"
)

// chainBlocks returns n prefix-chained blocks of a session (distinct per
// session): ids s<<32 | i.
func chainBlocks(s int32, n int) []uint64 {
	b := make([]uint64, n)
	for i := range b {
		b[i] = uint64(s+1)<<32 | uint64(i)
	}
	return b
}

// sharedChain is chainBlocks(s, n) behind a system prompt every session
// shares: its first sys blocks are 1000+i.
func sharedChain(s, sys, n int) []uint64 {
	b := chainBlocks(int32(s), n)
	for i := range min(sys, n) {
		b[i] = 1000 + uint64(i)
	}
	return b
}

func req(s int32, turn int, blocks []uint64) *workload.Request {
	return &workload.Request{Session: s, Turn: turn, Blocks: blocks}
}

func newKVC(t *testing.T, cfg KVCConfig) *KVC {
	t.Helper()
	if cfg.Prefill == 0 {
		cfg.Prefill = 1
	}
	if cfg.TauReject == 0 {
		cfg.TauReject = 3
	}
	if cfg.Epsilon == 0 {
		cfg.Epsilon = 2
	}
	k, err := NewKVC(cfg)
	require.NoError(t, err)
	return k
}

func TestNewKVCValidates(t *testing.T) {
	for _, cfg := range []KVCConfig{
		{Alpha: 1, TauReject: 3, Epsilon: 2, Prefill: 0, Decode: 1},
		{Alpha: 1, TauReject: 3, Epsilon: 2, Prefill: 1, Decode: 0},
		{Alpha: 1, TauReject: 0, Epsilon: 2, Prefill: 1, Decode: 1},
		{Alpha: 1, TauReject: 3, Epsilon: 0, Prefill: 1, Decode: 1},
		{Alpha: -1, TauReject: 3, Epsilon: 2, Prefill: 1, Decode: 1},
	} {
		_, err := NewKVC(cfg)
		require.Error(t, err, "%+v", cfg)
	}
}

// TestRouteTable walks Algorithm 1 line by line. Every case records
// index contents (session 9's blocks on some workers, session 0 is the
// request's), the state Σ for session 0, and the request's blocks.
func TestRouteTable(t *testing.T) {
	B := chainBlocks(0, 10) // the request's blocks
	type setup struct {
		d      int
		s      int32
		blocks []uint64
	}
	cases := []struct {
		name     string
		decode   int
		alpha    float64
		tau      int
		index    []setup
		pin      int
		rejects  []int32
		inflight []int
		assigned []int64
		tried    []int
		blocks   []uint64
		want     int
	}{
		{name: "line 11: the largest overlap wins", decode: 3, alpha: 1,
			index: []setup{{0, 9, B[:2]}, {1, 9, B[:5]}, {2, 9, B[:3]}}, pin: -1, want: 1},
		{name: "line 6: only the request's blocks count (extra resident blocks do not)", decode: 2, alpha: 1,
			index: []setup{{0, 9, append(chainBlocks(5, 50), B[0])}, {1, 9, B[:2]}}, pin: -1, want: 1},
		{name: "line 6: a duplicate block counts at each position", decode: 2, alpha: 1,
			index: []setup{{0, 9, B[:1]}, {1, 9, B[1:2]}}, pin: -1, blocks: []uint64{B[0], B[1], B[0]}, want: 0},
		{name: "lines 1–2: a blacklisted worker is skipped however good", decode: 3, alpha: 1, tau: 3,
			index: []setup{{0, 9, B[:9]}, {1, 9, B[:2]}}, pin: 0, rejects: []int32{3, 0, 0}, want: 1},
		{name: "lines 1–2: rejects = τ−1 is not blacklisted", decode: 2, alpha: 1, tau: 3,
			index: []setup{{0, 9, B[:9]}}, rejects: []int32{2, 0}, pin: -1, want: 0},
		{name: "lines 3–4: all blacklisted → argmin rejects (not the best overlap)", decode: 3, alpha: 1, tau: 2,
			index: []setup{{0, 9, B[:9]}}, pin: 0, rejects: []int32{5, 3, 4}, want: 1},
		{name: "lines 3–4: argmin ties → lowest index", decode: 3, alpha: 1, tau: 1,
			pin: -1, rejects: []int32{4, 2, 2}, want: 1},
		{name: "lines 3–4: argmin is over untried workers", decode: 3, alpha: 1, tau: 1,
			pin: -1, rejects: []int32{4, 1, 2}, tried: []int{1}, want: 2},
		{name: "degenerate only when every untried worker is blacklisted", decode: 3, alpha: 1, tau: 2,
			pin: -1, rejects: []int32{0, 5, 5}, tried: []int{0}, want: 1},
		{name: "tried set: the best worker was tried", decode: 3, alpha: 1,
			index: []setup{{0, 9, B[:9]}, {1, 9, B[:2]}, {2, 9, B[:1]}}, pin: 0, tried: []int{0}, want: 1},
		{name: "every worker tried → −1", decode: 2, alpha: 1, pin: -1, tried: []int{0, 1}, want: -1},
		{name: "main term: overlap + α·sticky beats a larger bare overlap", decode: 2, alpha: 2,
			index: []setup{{0, 9, B[:4]}, {1, 9, B[:5]}}, pin: 0, want: 0},
		{name: "main term: fractional α loses to a larger overlap", decode: 2, alpha: 0.5,
			index: []setup{{0, 9, B[:2]}, {1, 9, B[:3]}}, pin: 0, want: 1},
		{name: "α=1: two hits beat a pure sticky candidate", decode: 2, alpha: 1,
			index: []setup{{1, 9, B[:2]}}, pin: 0, want: 1},
		{name: "α=1: one hit only ties a pure sticky candidate; tie-1 (sticky) keeps the pin", decode: 2, alpha: 1,
			index: []setup{{1, 9, B[:1]}}, pin: 0, want: 0},
		{name: "tie-1: α=0, equal overlap, the pinned worker wins", decode: 3, alpha: 0,
			index: []setup{{0, 9, B[:3]}, {1, 9, B[:3]}, {2, 9, B[:3]}}, pin: 2, inflight: []int{0, 0, 9}, want: 2},
		{name: "tie-2: equal main and sticky, fewer inflight wins", decode: 3, alpha: 1,
			index: []setup{{0, 9, B[:3]}, {1, 9, B[:3]}, {2, 9, B[:3]}}, pin: -1, inflight: []int{2, 1, 3}, assigned: []int64{0, 9, 0}, want: 1},
		{name: "tie-3: equal main, sticky and inflight, fewer assigned wins", decode: 3, alpha: 1,
			pin: -1, inflight: []int{1, 1, 1}, assigned: []int64{5, 6, 4}, want: 2},
		{name: "full tie → lowest index", decode: 4, alpha: 1,
			pin: -1, inflight: []int{1, 0, 0, 0}, assigned: []int64{0, 3, 3, 3}, want: 1},
		{name: "workers across bitset words (|D|=130)", decode: 130, alpha: 1,
			index: []setup{{129, 9, B[:3]}, {64, 9, B[:2]}, {63, 9, B[:3]}}, pin: -1, inflight: func() []int {
				v := make([]int, 130)
				v[63] = 1
				return v
			}(), want: 129},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tau := c.tau
			if tau == 0 {
				tau = 3
			}
			k := newKVC(t, KVCConfig{Alpha: c.alpha, TauReject: tau, Decode: c.decode})
			for _, s := range c.index {
				k.index.Set(s.d, s.s, s.blocks)
			}
			st := k.state(0)
			st.pin = int32(c.pin)
			for d, v := range c.rejects {
				k.setRejects(st, d, v)
			}
			copy(k.inflight, c.inflight)
			copy(k.assigned, c.assigned)
			blocks := c.blocks
			if blocks == nil {
				blocks = B
			}
			ds := NewDispatch(req(0, 1, blocks))
			for _, d := range c.tried {
				ds.markTried(d)
			}
			require.Equal(t, c.want, k.Route(ds))
			// And the reference agrees.
			ref := newRefIndex(c.decode)
			for _, s := range c.index {
				ref.Set(s.d, s.s, s.blocks)
			}
			rs := refState{alpha: c.alpha, tau: tau, pin: c.pin, rejects: make([]int, c.decode),
				inflight: make([]int, c.decode), assigned: make([]int64, c.decode), tried: make([]bool, c.decode)}
			for d, v := range c.rejects {
				rs.rejects[d] = int(v)
			}
			copy(rs.inflight, c.inflight)
			copy(rs.assigned, c.assigned)
			for _, d := range c.tried {
				rs.tried[d] = true
			}
			require.Equal(t, c.want, refRoute(ref, rs, blocks))
		})
	}
}

// TestDispatchWalk walks Algorithm 3 for one request after another.
func TestDispatchWalk(t *testing.T) {
	k := newKVC(t, KVCConfig{Alpha: 1, TauReject: 3, Epsilon: 2, Prefill: 2, Decode: 3})

	// Turn 0: nothing resident, all scores tie on (0, 0, 0, 0) → worker 0.
	r0 := req(0, 0, chainBlocks(0, 4))
	ds := NewDispatch(r0)
	st := k.Begin(ds)
	require.Equal(t, Step{Action: ActAdmit, D: 0}, st)
	require.Equal(t, 0, k.Inflight(0), "routing alone changes nothing")
	// Seed: lines 8–10 then 15 (round-robin P).
	st = k.Admitted(ds, 0, ModeSeed)
	require.Equal(t, Step{Action: ActPrefill, P: 0, D: 0, Mode: ModeSeed}, st)
	require.Equal(t, 0, k.Pin(0))
	require.Equal(t, 1, k.Inflight(0))
	require.Equal(t, int64(1), k.Assigned(0))
	require.Equal(t, r0.Blocks, k.Index().Owned(0, 0), "admission records the prefix")
	require.Equal(t, 0, k.Stats(0).Migrations, "the first pin is not a migration")

	// Another session, turn 0: worker 0 has inflight 1 → tie-2 picks 1.
	ds1 := NewDispatch(req(1, 0, chainBlocks(1, 4)))
	require.Equal(t, Step{Action: ActAdmit, D: 1}, k.Begin(ds1))
	require.Equal(t, Step{Action: ActPrefill, P: 1, D: 1, Mode: ModeSeed}, k.Admitted(ds1, 1, ModeSeed), "P is round robin")
	k.Finished(0)
	k.Finished(1)

	// Turn 1 of session 0: overlap 4 + sticky on worker 0 → Direct.
	r1 := req(0, 1, chainBlocks(0, 6))
	ds = NewDispatch(r1)
	require.Equal(t, Step{Action: ActAdmit, D: 0}, k.Begin(ds))
	require.Equal(t, Step{Action: ActNone, D: 0, Mode: ModeDirect}, k.Admitted(ds, 0, ModeDirect), "Direct: nothing for the router to do")
	require.Equal(t, r1.Blocks, k.Index().Owned(0, 0))
	k.Finished(0)

	// Turn 2: worker 0 rejects (line 21–23): rejects++, tried, retry.
	ds = NewDispatch(req(0, 2, chainBlocks(0, 8)))
	require.Equal(t, Step{Action: ActAdmit, D: 0}, k.Begin(ds))
	st = k.Rejected(ds, 0, ReasonNoCapacity)
	require.Equal(t, 1, k.Rejects(0, 0))
	require.Equal(t, 1, ds.Tries)
	require.Equal(t, []string{ReasonNoCapacity}, ds.Reasons)
	require.True(t, ds.wasTried(0))
	// Next best: workers 1 and 2 tie on main; 1 has assigned 1 → worker 2.
	require.Equal(t, Step{Action: ActAdmit, D: 2}, st)
	// Reseed on worker 2: migration, P continues round robin (P=0).
	st = k.Admitted(ds, 2, ModeReseed)
	require.Equal(t, Step{Action: ActPrefill, P: 0, D: 2, Mode: ModeReseed}, st)
	require.Equal(t, 1, k.Stats(0).Migrations)
	require.Equal(t, 2, k.Pin(0))
	require.Equal(t, 1, k.Rejects(0, 0), "reset-on-success resets only the admitting worker")
	require.Equal(t, 0, k.Rejects(0, 2))
	require.Equal(t, SessionStats{Migrations: 1, Rejections: 1}, k.Stats(0))
}

// TestFallbackAfterEpsilon: ε rejections → Fallback through round-robin P
// and D, independent of the pin and of the tried set.
func TestFallbackAfterEpsilon(t *testing.T) {
	k := newKVC(t, KVCConfig{Alpha: 1, TauReject: 3, Epsilon: 2, Prefill: 2, Decode: 3})
	var fallbacks []Step
	for i := 0; i < 4; i++ {
		ds := NewDispatch(req(0, i, chainBlocks(0, 3)))
		st := k.Begin(ds)
		require.Equal(t, ActAdmit, st.Action)
		st = k.Rejected(ds, st.D, ReasonNoCapacity)
		require.Equal(t, ActAdmit, st.Action, "one retry left")
		st = k.Rejected(ds, st.D, ReasonLargeAppend)
		require.Equal(t, ActPrefill, st.Action)
		require.Equal(t, ModeFallback, st.Mode)
		require.True(t, st.Unadmitted)
		require.Equal(t, 2, ds.Tries)
		require.Equal(t, []string{ReasonNoCapacity, ReasonLargeAppend}, ds.Reasons)
		fallbacks = append(fallbacks, st)
		k.Finished(st.D)
	}
	var ps, ds []int
	for _, st := range fallbacks {
		ps, ds = append(ps, st.P), append(ds, st.D)
	}
	require.Equal(t, []int{0, 1, 0, 1}, ps)
	require.Equal(t, []int{0, 1, 2, 0}, ds)
	s := k.Stats(0)
	require.Equal(t, 4, s.Fallbacks)
	require.Equal(t, 8, s.Rejections)
	require.Equal(t, int64(2), k.Assigned(0), "Fallback counts as an assignment to its D")
	require.Equal(t, -1, k.Pin(0), "Fallback does not pin")
	require.Nil(t, k.Index().Owned(0, 0), "Fallback records nothing")
}

func TestFallbackWhenEveryWorkerTried(t *testing.T) {
	k := newKVC(t, KVCConfig{Alpha: 1, TauReject: 3, Epsilon: 5, Decode: 2})
	ds := NewDispatch(req(0, 0, nil))
	st := k.Begin(ds)
	st = k.Rejected(ds, st.D, ReasonNotResident)
	require.Equal(t, ActAdmit, st.Action)
	st = k.Rejected(ds, st.D, ReasonNotResident)
	require.Equal(t, ModeFallback, st.Mode, "line 5: d* = ⊥ breaks the loop before ε")
	require.Equal(t, 2, ds.Tries)
}

// TestResetOnSuccess: line 8 resets rejects[s,d*] under v2 and is absent
// with V1.
func TestResetOnSuccess(t *testing.T) {
	for _, v1 := range []bool{false, true} {
		k := newKVC(t, KVCConfig{Alpha: 1, TauReject: 5, Epsilon: 1, Decode: 1, V1: v1})
		for i := 0; i < 2; i++ {
			ds := NewDispatch(req(0, i, nil))
			st := k.Begin(ds)
			require.Equal(t, 0, st.D)
			require.Equal(t, ModeFallback, k.Rejected(ds, 0, ReasonNoCapacity).Mode)
		}
		require.Equal(t, 2, k.Rejects(0, 0))
		ds := NewDispatch(req(0, 2, nil))
		require.Equal(t, 0, k.Begin(ds).D)
		k.Admitted(ds, 0, ModeReseed)
		if v1 {
			require.Equal(t, 2, k.Rejects(0, 0), "V1 keeps counting")
		} else {
			require.Equal(t, 0, k.Rejects(0, 0), "v2 resets on success")
		}
	}
}

// TestBlacklistCounting: a blacklist event is counted when rejects[s,d]
// reaches τ_reject, once, and again after a reset brings it back.
func TestBlacklistCounting(t *testing.T) {
	k := newKVC(t, KVCConfig{Alpha: 1, TauReject: 2, Epsilon: 1, Decode: 1})
	reject := func() {
		ds := NewDispatch(req(0, 0, nil))
		st := k.Begin(ds)
		require.Equal(t, ActAdmit, st.Action)
		k.Rejected(ds, st.D, ReasonNoCapacity)
	}
	reject()
	require.Equal(t, 0, k.Stats(0).Blacklists)
	reject()
	require.Equal(t, 1, k.Stats(0).Blacklists)
	// Blacklisted and alone: the degenerate branch still routes to it.
	reject()
	require.Equal(t, 1, k.Stats(0).Blacklists, "τ+1 is not a new event")
	require.Equal(t, 1, k.Stats(0).Degenerate)
	ds := NewDispatch(req(0, 1, nil))
	require.Equal(t, 0, k.Begin(ds).D)
	require.Equal(t, 2, k.Stats(0).Degenerate)
	k.Admitted(ds, 0, ModeReseed)
	reject()
	reject()
	require.Equal(t, 2, k.Stats(0).Blacklists)
}

func TestFinishedAndEvicted(t *testing.T) {
	k := newKVC(t, KVCConfig{Alpha: 1, Decode: 2})
	require.Equal(t, 2, k.Config().Decode)
	k.Finished(0)
	k.Finished(-1)
	k.Finished(7)
	require.Equal(t, 0, k.Inflight(0), "never negative, out of range ignored")
	ds := NewDispatch(req(3, 0, chainBlocks(3, 5)))
	k.Begin(ds)
	k.Admitted(ds, 1, ModeSeed)
	require.Equal(t, 1, k.Inflight(1))
	require.Equal(t, 5, k.Index().WorkerBlocks(1))
	k.Evicted(1, 3)
	require.Equal(t, 0, k.Index().WorkerBlocks(1))
	require.Equal(t, 1, k.Pin(3), "eviction does not move the pin")
	k.Finished(1)
	require.Equal(t, 0, k.Inflight(1))
	seen := 0
	k.Sessions(func(s int32, st SessionStats) { seen++; require.Equal(t, int32(3), s) })
	require.Equal(t, 1, seen)
	routes, _ := k.RouteStats()
	require.Equal(t, int64(1), routes)
}

// TestRouteChainShortcut checks that a warm request takes the chain
// shortcut and a corrupted index falls back to the scan, with equal results.
func TestRouteChainShortcut(t *testing.T) {
	k := newKVC(t, KVCConfig{Alpha: 1, Decode: 4})
	prev := chainBlocks(0, 100)
	ds := NewDispatch(req(0, 0, prev))
	k.Admitted(ds, 2, ModeSeed)
	k.index.Set(1, 5, prev[:40]) // another session sharing a prefix, elsewhere
	cur := NewDispatch(req(0, 1, chainBlocks(0, 120)))
	require.Equal(t, 2, k.Route(cur))
	_, chained := k.RouteStats()
	require.Equal(t, int64(1), chained)
	ov := make([]int, 4)
	require.Equal(t, 100, k.index.OverlapOwned(cur.Req.Blocks, 2, 0, ov))
	require.Equal(t, []int{0, 40, 100, 0}, ov)

	// A list that puts a block off its chain position disables the shortcut.
	k.index.Set(3, 6, []uint64{prev[5]})
	require.False(t, k.index.Chained())
	clear(ov)
	require.Equal(t, 0, k.index.OverlapOwned(cur.Req.Blocks, 2, 0, ov))
	require.Equal(t, []int{0, 40, 100, 1}, ov)
	require.Equal(t, 2, k.Route(cur))
	k.index.Remove(3, 6)
	require.True(t, k.index.Chained(), "removing the odd list restores it")
}

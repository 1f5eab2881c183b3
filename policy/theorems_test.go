package policy

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/workload"
)

// Property tests of §3.3's invariants and §4's theorems against a small
// pure model of decode workers that decide with Admit and account their
// KV pool:
//
//   - a worker holds, per session, the footprint of the last turn it
//     admitted (input_len + output_len, reserved on admission through
//     AdmitInput.Reserve);
//   - the real append is input_len minus that footprint;
//   - requests complete at random (Finished to the router), and idle
//     sessions are evicted at random with a notice to the router
//     (Evicted), so the router's estimate stays the worker's truth;
//   - Fallback requests are served by vanilla P/D and do not enter the
//     model's session pools (they reserve transiently on a real worker).

const modelBlockTokens = 16

type mRes struct {
	tokens int
	active int
}

type mWorker struct {
	budget    int
	rho       float64
	tauAppend int
	used      int
	sess      map[int32]*mRes
}

func (w *mWorker) input(r *workload.Request) AdmitInput {
	res := w.sess[r.Session]
	in := AdmitInput{Turn: r.Turn, InputLen: r.InputLen, AppendLen: r.InputLen, Reserve: r.OutputLen,
		Used: w.used, Budget: w.budget, Rho: w.rho, TauAppend: w.tauAppend}
	if res != nil {
		in.Resident = true
		in.AppendLen = max(0, r.InputLen-res.tokens)
	}
	return in
}

func (w *mWorker) admit(r *workload.Request) (Mode, string) {
	mode, reason := Admit(w.input(r))
	if mode == ModeNone {
		return mode, reason
	}
	res := w.sess[r.Session]
	if res == nil {
		res = &mRes{}
		w.sess[r.Session] = res
	}
	fp := r.InputLen + r.OutputLen
	w.used += fp - res.tokens
	res.tokens = fp
	res.active++
	return mode, ""
}

type mSession struct {
	id          int32
	turn        int
	in, out     int
	busy        bool
	appendSizes []int
}

type mInflight struct {
	d       int
	s       int32
	modeled bool // admitted by a model worker (not Fallback)
}

type model struct {
	t        *rapid.T
	k        *KVC
	cfg      KVCConfig
	workers  []*mWorker
	sessions []*mSession
	inflight []mInflight
	sys      int // shared system-prompt blocks
	nextID   int32
}

func drawModel(t *rapid.T, cfg KVCConfig) *model {
	m := &model{t: t, cfg: cfg, sys: rapid.IntRange(0, 4).Draw(t, "sys")}
	k, err := NewKVC(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.k = k
	rho := rapid.SampledFrom([]float64{0.9, 0.95, 1}).Draw(t, "rho")
	tauAppend := rapid.SampledFrom([]int{200, 800, 8192}).Draw(t, "tauAppend")
	for d := 0; d < cfg.Decode; d++ {
		m.workers = append(m.workers, &mWorker{
			budget: rapid.IntRange(1500, 12000).Draw(t, "budget"), rho: rho, tauAppend: tauAppend,
			sess: map[int32]*mRes{},
		})
	}
	for s := 0; s < rapid.IntRange(1, 8).Draw(t, "sessions"); s++ {
		m.sessions = append(m.sessions, &mSession{id: int32(s)})
		m.nextID = int32(s)
	}
	return m
}

// nextRequest builds the next turn of session s: the prompt grows by the
// previous output and a new append; blocks are the shared system prompt
// then session blocks, prefix-chained.
func (m *model) nextRequest(s *mSession) *workload.Request {
	if s.turn >= 12 {
		// The session ends; a new one takes its slot.
		m.nextID++
		*s = mSession{id: m.nextID}
	}
	app := rapid.IntRange(10, 900).Draw(m.t, "append")
	out := rapid.IntRange(1, 200).Draw(m.t, "output")
	in := app
	if s.turn > 0 {
		in = s.in + s.out + app
	}
	nb := in / modelBlockTokens
	blocks := make([]uint64, nb)
	for i := range blocks {
		if i < m.sys {
			blocks[i] = 0xABC0 + uint64(i)
		} else {
			blocks[i] = uint64(s.id+1)<<32 | uint64(i)
		}
	}
	r := &workload.Request{Session: s.id, Turn: s.turn, InputLen: in, OutputLen: out, AppendLen: app,
		Blocks: blocks, BlockTokens: modelBlockTokens}
	s.in, s.out = in, out
	s.turn++
	return r
}

type outcome struct {
	mode       Mode
	d          int
	rejections int
}

// dispatch runs Algorithm 3 against the model workers and checks the
// per-admission facts (reset-on-success, invariant 1).
func (m *model) dispatch(r *workload.Request) outcome {
	ds := NewDispatch(r)
	st := m.k.Begin(ds)
	for st.Action == ActAdmit {
		w := m.workers[st.D]
		before := m.k.Rejects(r.Session, st.D)
		mode, reason := w.admit(r)
		if mode == ModeNone {
			st = m.k.Rejected(ds, st.D, reason)
			continue
		}
		d := st.D
		m.k.Admitted(ds, d, mode)
		// Reset-on-success (line 8), or its absence with V1.
		if m.cfg.V1 {
			if m.k.Rejects(r.Session, d) != before {
				m.t.Fatalf("V1 changed rejects[%d,%d] on success", r.Session, d)
			}
		} else if m.k.Rejects(r.Session, d) != 0 {
			m.t.Fatalf("v2 left rejects[%d,%d] = %d after success", r.Session, d, m.k.Rejects(r.Session, d))
		}
		// Invariant 1.
		if float64(w.used) > w.rho*float64(w.budget) {
			m.t.Fatalf("worker %d holds %d tokens > ρ·K_d = %g", d, w.used, w.rho*float64(w.budget))
		}
		m.inflight = append(m.inflight, mInflight{d: d, s: r.Session, modeled: true})
		return outcome{mode: mode, d: d, rejections: ds.Tries}
	}
	if st.Mode != ModeFallback {
		m.t.Fatalf("dispatch ended with %+v", st)
	}
	m.inflight = append(m.inflight, mInflight{d: st.D, s: r.Session})
	return outcome{mode: ModeFallback, d: st.D, rejections: ds.Tries}
}

// step performs one random event; onDispatch sees every dispatch before
// and after.
func (m *model) step(before func(r *workload.Request) any, after func(r *workload.Request, o outcome, pre any)) {
	switch rapid.IntRange(0, 9).Draw(m.t, "event") {
	case 0, 1, 2: // complete a request
		if len(m.inflight) == 0 {
			return
		}
		i := rapid.IntRange(0, len(m.inflight)-1).Draw(m.t, "complete")
		f := m.inflight[i]
		m.inflight = append(m.inflight[:i], m.inflight[i+1:]...)
		m.k.Finished(f.d)
		if f.modeled {
			m.workers[f.d].sess[f.s].active--
		}
		for _, s := range m.sessions {
			if s.id == f.s {
				s.busy = false
			}
		}
	case 3: // evict an idle session somewhere
		d := rapid.IntRange(0, len(m.workers)-1).Draw(m.t, "evictWorker")
		w := m.workers[d]
		for s, res := range w.sess {
			if res.active == 0 {
				w.used -= res.tokens
				delete(w.sess, s)
				m.k.Evicted(d, s)
				break
			}
		}
	default: // the next turn of an idle session
		s := m.sessions[rapid.IntRange(0, len(m.sessions)-1).Draw(m.t, "session")]
		if s.busy {
			return
		}
		r := m.nextRequest(s)
		var pre any
		if before != nil {
			pre = before(r)
		}
		o := m.dispatch(r)
		s.busy = true
		if after != nil {
			after(r, o, pre)
		}
	}
}

func (m *model) run(before func(r *workload.Request) any, after func(r *workload.Request, o outcome, pre any)) {
	steps := rapid.IntRange(30, 300).Draw(m.t, "steps")
	for i := 0; i < steps; i++ {
		m.step(before, after)
	}
}

func drawConfig(t *rapid.T, epsilon int) KVCConfig {
	d := rapid.IntRange(1, 6).Draw(t, "decode")
	if epsilon == 0 {
		epsilon = rapid.IntRange(1, 3).Draw(t, "epsilon")
	} else if epsilon < 0 {
		epsilon = d + rapid.IntRange(0, 2).Draw(t, "extraEpsilon")
	}
	return KVCConfig{
		Alpha:     rapid.SampledFrom([]float64{0, 0.5, 1, 2}).Draw(t, "alpha"),
		TauReject: rapid.IntRange(1, 3).Draw(t, "tauReject"),
		Epsilon:   epsilon,
		V1:        rapid.Bool().Draw(t, "v1"),
		Prefill:   rapid.IntRange(1, 3).Draw(t, "prefill"),
		Decode:    d,
	}
}

// TestTheorem1NoStarvation: with ε ≥ |D| (the theorem's setting), a
// request that some worker can admit at dispatch time is never a
// Fallback and needs at most |D|−1 rejections (≤ |D|·τ_reject retries);
// one that no worker can admit tries every worker and falls back.
// Invariant 1 and reset-on-success are checked on every admission.
func TestTheorem1NoStarvation(t *testing.T) {
	admissible := 0
	// -short runs few rapid checks: draw again until the premise occurs
	// at least once, so the theorem is never checked vacuously.
	for try := 0; try < 20 && admissible == 0; try++ {
		rapid.Check(t, func(t *rapid.T) {
			m := drawModel(t, drawConfig(t, -1))
			nd := m.cfg.Decode
			m.run(func(r *workload.Request) any {
				for _, w := range m.workers {
					if mode, _ := Admit(w.input(r)); mode != ModeNone {
						return true
					}
				}
				return false
			}, func(r *workload.Request, o outcome, pre any) {
				if pre.(bool) {
					admissible++
					if o.mode == ModeFallback {
						t.Fatalf("admissible request %+v fell back", *r)
					}
					if o.rejections > nd*m.cfg.TauReject || o.rejections > nd-1 {
						t.Fatalf("admitted after %d rejections (|D| = %d)", o.rejections, nd)
					}
				} else if o.mode != ModeFallback || o.rejections != nd {
					t.Fatalf("inadmissible request: %v after %d rejections, want Fallback after %d", o.mode, o.rejections, nd)
				}
			})
		})
	}
	require.Positive(t, admissible)
}

// TestTheorem2FastPath: if session s is pinned to d, rejects[s,d] <
// τ_reject (d is not blacklisted — true after any success on d under v2),
// the router records every block of the request on d, and on d the
// session is resident with append ≤ τ_append and cap_ok, then the request
// is Direct on d at the first try. Any ε, α ≥ 0, v1 or v2.
func TestTheorem2FastPath(t *testing.T) {
	hits := 0
	// -short runs few rapid checks: draw again until the premise occurs
	// at least once, so the theorem is never checked vacuously.
	for try := 0; try < 20 && hits == 0; try++ {
		rapid.Check(t, func(t *rapid.T) {
			m := drawModel(t, drawConfig(t, 0))
			m.run(func(r *workload.Request) any {
				d := m.k.Pin(r.Session)
				if d < 0 || m.k.Rejects(r.Session, d) >= m.cfg.TauReject {
					return -1
				}
				for _, b := range r.Blocks {
					if !m.k.Index().Has(d, b) {
						return -1
					}
				}
				in := m.workers[d].input(r)
				if !in.Resident || in.AppendLen > in.TauAppend || !in.CapOK() {
					return -1
				}
				return d
			}, func(r *workload.Request, o outcome, pre any) {
				d := pre.(int)
				if d < 0 {
					return
				}
				hits++
				if o.mode != ModeDirect || o.d != d || o.rejections != 0 {
					t.Fatalf("premise of Theorem 2 held on worker %d but the outcome was %+v", d, o)
				}
			})
		})
	}
	require.Positive(t, hits)
}

// TestInvariant1NoOverload: whatever the configuration, a model worker
// that admits only through Admit never holds more than ρ·K_d tokens
// (checked after every admission inside dispatch, and here at the end).
func TestInvariant1NoOverload(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := drawModel(t, drawConfig(t, 0))
		m.run(nil, nil)
		for d, w := range m.workers {
			if float64(w.used) > w.rho*float64(w.budget) {
				t.Fatalf("worker %d overloaded: %d > %g", d, w.used, w.rho*float64(w.budget))
			}
		}
	})
}

// ---------------------------------------------------------------- invariant 3

// oracle drives KVC with arbitrary admission answers (the worst case a
// worker's load can produce) for requests whose blocks are private to
// their session and grow turn by turn, with no eviction notices. Under
// these stream assumptions the pinned worker always has the largest
// overlap, so with α > 0 Route tries it first unless it is blacklisted
// (assumption S1 below).
type oracle struct {
	t          *rapid.T
	k          *KVC
	cfg        KVCConfig
	sessions   int
	turn       []int
	persistent bool            // a worker that rejected a session rejects it forever
	refused    map[[2]int]bool // (s, d) that rejected, for persistent
	pAccept    float64
	// per session, for the bound's preconditions
	consecutive []int // rejections on the current pin since its last success
}

func (o *oracle) answer(s, d int) bool {
	if o.persistent && o.refused[[2]int{s, d}] {
		return false
	}
	ok := rapid.Float64Range(0, 1).Draw(o.t, "u") < o.pAccept
	if !ok && o.persistent {
		o.refused[[2]int{s, d}] = true
	}
	return ok
}

// dispatch one turn of session s; it returns whether a migration happened
// and the consecutive rejections on the old pin before it.
func (o *oracle) dispatch(s int) (migrated bool, before int) {
	o.turn[s]++
	r := req(int32(s), o.turn[s], chainBlocks(int32(s), 4+o.turn[s]))
	ds := NewDispatch(r)
	st := o.k.Begin(ds)
	for st.Action == ActAdmit {
		pin := o.k.Pin(int32(s))
		if o.answer(s, st.D) {
			migrated = pin >= 0 && pin != st.D
			before = o.consecutive[s]
			o.k.Admitted(ds, st.D, ModeReseed)
			o.consecutive[s] = 0
			o.k.Finished(st.D)
			return migrated, before
		}
		if st.D == pin {
			o.consecutive[s]++
		}
		st = o.k.Rejected(ds, st.D, ReasonNoCapacity)
	}
	o.k.Finished(st.D)
	return false, 0
}

// TestInvariant3MigrationBound states when §3.3's "migrations per session
// ≤ (|D|−1)·τ_reject" holds and tests it. Stream assumptions:
//
//	S1. the pinned worker's overlap is never below another worker's (true
//	    when a session's blocks are private to it, its prompt only grows,
//	    and the router gets no eviction notice for the pinned copy), and
//	    α > 0;
//
// and either
//
//	(a) ε = 1, v2, and the degenerate branch is never taken for the
//	    session (some worker stays outside its blacklist): then every
//	    migration leaves a worker after exactly τ_reject consecutive
//	    rejections there with no success in between, that worker stays
//	    blacklisted, so migrations ≤ |D|−1 ≤ (|D|−1)·τ_reject; or
//	(b) rejections are persistent (a worker that rejected a session never
//	    admits it again), any ε, v1 or v2: every migration leaves a worker
//	    that can never be pinned again, so migrations ≤ |D|−1.
//
// TestMigrationBoundNeedsItsAssumptions shows the bound failing with ε = 2.
func TestInvariant3MigrationBound(t *testing.T) {
	checked := 0
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprintf("persistent=%v", persistent), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				nd := rapid.IntRange(1, 5).Draw(t, "decode")
				cfg := KVCConfig{Alpha: rapid.SampledFrom([]float64{0.5, 1, 3}).Draw(t, "alpha"),
					TauReject: rapid.IntRange(1, 4).Draw(t, "tau"), Epsilon: 1, Prefill: 1, Decode: nd}
				if persistent {
					cfg.Epsilon = rapid.IntRange(1, nd+1).Draw(t, "epsilon")
					cfg.V1 = rapid.Bool().Draw(t, "v1")
				}
				k, err := NewKVC(cfg)
				if err != nil {
					t.Fatal(err)
				}
				o := &oracle{t: t, k: k, cfg: cfg, sessions: rapid.IntRange(1, 4).Draw(t, "sessions"),
					persistent: persistent, refused: map[[2]int]bool{},
					pAccept: rapid.Float64Range(0.05, 1).Draw(t, "pAccept")}
				o.turn = make([]int, o.sessions)
				o.consecutive = make([]int, o.sessions)
				steps := rapid.IntRange(20, 200).Draw(t, "steps")
				for i := 0; i < steps; i++ {
					s := rapid.IntRange(0, o.sessions-1).Draw(t, "s")
					migrated, before := o.dispatch(s)
					if migrated && !persistent && k.Stats(int32(s)).Degenerate == 0 && before != cfg.TauReject {
						t.Fatalf("session %d migrated after %d consecutive rejections on its pin, want τ_reject = %d", s, before, cfg.TauReject)
					}
				}
				for s := 0; s < o.sessions; s++ {
					st := k.Stats(int32(s))
					if !persistent && st.Degenerate > 0 {
						continue
					}
					if st.Migrations > 0 {
						checked++
					}
					if st.Migrations > nd-1 {
						t.Fatalf("session %d: %d migrations > |D|−1 = %d (%+v)", s, st.Migrations, nd-1, st)
					}
				}
			})
		})
	}
	require.Positive(t, checked, "no checked session ever migrated")
	t.Logf("%d sessions migrated within the bound's assumptions", checked)
}

// TestMigrationBoundNeedsItsAssumptions: with ε = 2 a single rejection
// moves a session (line 4's retry goes to the next-best worker), and
// reset-on-success clears the counter of the worker it comes back to, so
// alternating transient pressure migrates it without bound under v2.
func TestMigrationBoundNeedsItsAssumptions(t *testing.T) {
	k := newKVC(t, KVCConfig{Alpha: 1, TauReject: 3, Epsilon: 2, Decode: 2})
	for turn := 0; turn < 20; turn++ {
		ds := NewDispatch(req(0, turn, chainBlocks(0, 4+turn)))
		st := k.Begin(ds)
		if pin := k.Pin(0); pin >= 0 {
			require.Equal(t, pin, st.D)
			st = k.Rejected(ds, st.D, ReasonNoCapacity) // the pinned worker is busy this time
		}
		require.Equal(t, ActAdmit, st.Action)
		k.Admitted(ds, st.D, ModeReseed)
		k.Finished(st.D)
	}
	s := k.Stats(0)
	require.Equal(t, 19, s.Migrations)
	require.Greater(t, s.Migrations, (2-1)*3)
	require.Zero(t, s.Blacklists, "no counter ever reaches τ_reject")
}

// TestResetOnSuccessPreventsThrash is §3.4's story: a session at home on
// worker 0, hit by scattered transient rejections each followed by a
// success. v2 forgives them and the session stays Direct at home; v1
// accumulates them, blacklists its home and moves it away (a Reseed that
// loses its KV residency).
func TestResetOnSuccessPreventsThrash(t *testing.T) {
	for _, v1 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v1=%v", v1), func(t *testing.T) {
			k := newKVC(t, KVCConfig{Alpha: 1, TauReject: 3, Epsilon: 1, Decode: 2, V1: v1})
			turn := 0
			send := func(accept bool) Step {
				ds := NewDispatch(req(0, turn, chainBlocks(0, 4+turn)))
				turn++
				st := k.Begin(ds)
				if st.Action != ActAdmit {
					return st
				}
				d := st.D
				if accept {
					mode := ModeDirect
					if k.Pin(0) != d {
						mode = ModeReseed
					}
					st = k.Admitted(ds, d, mode)
					st.D = d
				} else {
					st = k.Rejected(ds, d, ReasonNoCapacity)
				}
				k.Finished(st.D)
				return st
			}
			require.Equal(t, 0, send(true).D)
			for i := 0; i < 3; i++ {
				require.Equal(t, ModeFallback, send(false).Mode, "transient rejection")
				st := send(true)
				if v1 && i == 2 {
					require.Equal(t, 1, st.D, "v1: home blacklisted by 3 scattered rejections")
					require.Equal(t, ModeReseed, st.Mode)
				} else {
					require.Equal(t, 0, st.D, "back home")
					require.Equal(t, ModeDirect, st.Mode)
				}
			}
			if v1 {
				require.Equal(t, 1, k.Stats(0).Migrations)
				require.Equal(t, 1, k.Stats(0).Blacklists)
			} else {
				require.Zero(t, k.Stats(0).Migrations)
				require.Zero(t, k.Stats(0).Blacklists)
			}
		})
	}
}

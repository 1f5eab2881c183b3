package policy

import (
	"fmt"

	"github.com/pdemu/pdemu/workload"
)

// Action is what a router must do next for a request.
type Action uint8

// Actions.
const (
	// ActNone: nothing more to do (Direct: the decode worker runs it).
	ActNone Action = iota
	// ActAdmit: ask decode worker D for admission (Algorithm 2 RPC).
	ActAdmit
	// ActPrefill: prefill on P, move the KV to D, decode on D, in Mode.
	ActPrefill
)

// Step is a policy's instruction to the router actor.
type Step struct {
	Action Action
	P, D   int
	Mode   Mode
}

// Dispatch is the per-request state of Algorithm 3 (retries, tried set).
type Dispatch struct {
	Req     *workload.Request
	Tries   int      // admission attempts so far (retries)
	Reasons []string // rejection reasons in order
	tried   []uint64 // bitset of decode workers already tried
}

// NewDispatch starts dispatching r.
func NewDispatch(r *workload.Request) *Dispatch { return &Dispatch{Req: r} }

func (ds *Dispatch) wasTried(d int) bool {
	w := d >> 6
	return w < len(ds.tried) && ds.tried[w]&(1<<(uint(d)&63)) != 0
}

func (ds *Dispatch) markTried(d int) {
	for len(ds.tried) <= d>>6 {
		ds.tried = append(ds.tried, 0)
	}
	ds.tried[d>>6] |= 1 << (uint(d) & 63)
}

// KVCConfig holds the KVC-Router hyperparameters.
type KVCConfig struct {
	Alpha     float64 // α, sticky bonus
	TauReject int     // τ_reject
	Epsilon   int     // ε, admission tries before Fallback
	V1        bool    // omit reset-on-success (Algorithm 3 line 8)
	Prefill   int     // number of prefill workers
	Decode    int     // number of decode workers
}

// SessionStats are per-session counters reported in the outputs.
type SessionStats struct {
	Migrations int // pin moved from one decode worker to another
	Blacklists int // (s, d) pairs that reached τ_reject
	Fallbacks  int // requests that fell back to vanilla P/D
	Rejections int // admission rejections
}

type sessState struct {
	pin     int32 // -1 = ⊥
	rejects []int32
	stats   SessionStats
}

// KVC is the KVC-Router (Algorithms 1 and 3; Algorithm 2 is Admit).
type KVC struct {
	cfg      KVCConfig
	sess     map[int32]*sessState
	inflight []int
	assigned []int64
	index    *ResidentIndex
	rrP, rrD int
	overlap  []int // scratch
}

// NewKVC validates cfg and returns a router with empty state.
func NewKVC(cfg KVCConfig) (*KVC, error) {
	if cfg.Decode < 1 || cfg.Prefill < 1 {
		return nil, fmt.Errorf("policy: kvc needs at least one prefill and one decode worker (got %d, %d)", cfg.Prefill, cfg.Decode)
	}
	if cfg.TauReject < 1 || cfg.Epsilon < 1 || cfg.Alpha < 0 {
		return nil, fmt.Errorf("policy: kvc needs tau_reject >= 1, epsilon >= 1, alpha >= 0 (got %d, %d, %g)", cfg.TauReject, cfg.Epsilon, cfg.Alpha)
	}
	return &KVC{
		cfg:      cfg,
		sess:     make(map[int32]*sessState),
		inflight: make([]int, cfg.Decode),
		assigned: make([]int64, cfg.Decode),
		index:    NewResidentIndex(cfg.Decode),
		overlap:  make([]int, cfg.Decode),
	}, nil
}

// Index exposes the resident estimate (read-only use).
func (k *KVC) Index() *ResidentIndex { return k.index }

// Inflight returns the router's inflight count for d.
func (k *KVC) Inflight(d int) int { return k.inflight[d] }

// Pin returns the decode worker session s is pinned to, or -1.
func (k *KVC) Pin(s int32) int {
	if st := k.sess[s]; st != nil {
		return int(st.pin)
	}
	return -1
}

// Rejects returns rejects[s, d].
func (k *KVC) Rejects(s int32, d int) int {
	if st := k.sess[s]; st != nil {
		return int(st.rejects[d])
	}
	return 0
}

// Stats returns the per-session counters (a copy).
func (k *KVC) Stats(s int32) SessionStats {
	if st := k.sess[s]; st != nil {
		return st.stats
	}
	return SessionStats{}
}

// Sessions calls f for every session the router has seen.
func (k *KVC) Sessions(f func(s int32, st SessionStats)) {
	for s, st := range k.sess {
		f(s, st.stats)
	}
}

func (k *KVC) state(s int32) *sessState {
	st := k.sess[s]
	if st == nil {
		st = &sessState{pin: -1, rejects: make([]int32, k.cfg.Decode)}
		k.sess[s] = st
	}
	return st
}

// Route is Algorithm 1 over the decode workers not in ds's tried set. It
// returns -1 when every worker was tried.
func (k *KVC) Route(ds *Dispatch) int {
	r := ds.Req
	st := k.state(r.Session)
	// Lines 1–4: blacklist; degenerate branch returns the least-rejected.
	candidates := 0
	for d := 0; d < k.cfg.Decode; d++ {
		if !ds.wasTried(d) && int(st.rejects[d]) < k.cfg.TauReject {
			candidates++
		}
	}
	if candidates == 0 {
		best := -1
		for d := 0; d < k.cfg.Decode; d++ {
			if ds.wasTried(d) {
				continue
			}
			if best < 0 || st.rejects[d] < st.rejects[best] {
				best = d
			}
		}
		return best
	}
	// Lines 5–11: lexicographic max of (overlap+α·sticky, sticky, −inflight, −assigned).
	ov := k.overlap
	clear(ov)
	k.index.Overlap(r.Blocks, ov)
	best := -1
	var bestMain float64
	var bestSticky int
	for d := 0; d < k.cfg.Decode; d++ {
		if ds.wasTried(d) || int(st.rejects[d]) >= k.cfg.TauReject {
			continue
		}
		sticky := 0
		if int(st.pin) == d {
			sticky = 1
		}
		main := float64(ov[d]) + k.cfg.Alpha*float64(sticky)
		if best < 0 || better(main, sticky, k.inflight[d], k.assigned[d], bestMain, bestSticky, k.inflight[best], k.assigned[best]) {
			best, bestMain, bestSticky = d, main, sticky
		}
	}
	return best
}

// better compares two score tuples lexicographically; ties keep the lower
// worker index (the earlier one), which makes Route deterministic.
func better(m1 float64, s1, i1 int, a1 int64, m2 float64, s2, i2 int, a2 int64) bool {
	if m1 != m2 {
		return m1 > m2
	}
	if s1 != s2 {
		return s1 > s2
	}
	if i1 != i2 {
		return i1 < i2
	}
	return a1 < a2
}

// Begin starts Algorithm 3 for a new request.
func (k *KVC) Begin(ds *Dispatch) Step { return k.next(ds) }

func (k *KVC) next(ds *Dispatch) Step {
	if ds.Tries < k.cfg.Epsilon {
		if d := k.Route(ds); d >= 0 {
			return Step{Action: ActAdmit, D: d}
		}
	}
	// Lines 25–29: Fallback through round-robin P and D.
	st := k.state(ds.Req.Session)
	st.stats.Fallbacks++
	p, d := k.rrP, k.rrD
	k.rrP = (k.rrP + 1) % k.cfg.Prefill
	k.rrD = (k.rrD + 1) % k.cfg.Decode
	k.inflight[d]++
	k.assigned[d]++
	return Step{Action: ActPrefill, P: p, D: d, Mode: ModeFallback}
}

// Admitted handles a positive admission reply from d (lines 7–19).
func (k *KVC) Admitted(ds *Dispatch, d int, mode Mode) Step {
	r := ds.Req
	st := k.state(r.Session)
	if !k.cfg.V1 {
		st.rejects[d] = 0 // reset-on-success
	}
	if st.pin >= 0 && int(st.pin) != d {
		st.stats.Migrations++
	}
	st.pin = int32(d)
	k.inflight[d]++
	k.assigned[d]++
	k.index.Set(d, r.Session, r.Blocks)
	if mode == ModeDirect {
		return Step{Action: ActNone, D: d, Mode: mode}
	}
	p := k.rrP
	k.rrP = (k.rrP + 1) % k.cfg.Prefill
	return Step{Action: ActPrefill, P: p, D: d, Mode: mode}
}

// Rejected handles a rejection from d (lines 21–23) and returns the next step.
func (k *KVC) Rejected(ds *Dispatch, d int, reason string) Step {
	st := k.state(ds.Req.Session)
	st.rejects[d]++
	if int(st.rejects[d]) == k.cfg.TauReject {
		st.stats.Blacklists++
	}
	st.stats.Rejections++
	ds.markTried(d)
	ds.Tries++
	ds.Reasons = append(ds.Reasons, reason)
	return k.next(ds)
}

// Finished records that a request dispatched to d ended.
func (k *KVC) Finished(d int) {
	if d >= 0 && d < len(k.inflight) && k.inflight[d] > 0 {
		k.inflight[d]--
	}
}

// Evicted records a decode worker's eviction notice for session s.
func (k *KVC) Evicted(d int, s int32) { k.index.Remove(d, s) }

// Vanilla is the plain P/D baseline: round-robin P and D, every request
// prefilled on P (with P's prefix cache) and its full KV moved to D.
type Vanilla struct {
	np, nd   int
	rrP, rrD int
}

// NewVanilla returns a round-robin router over np prefill and nd decode workers.
func NewVanilla(np, nd int) (*Vanilla, error) {
	if np < 1 || nd < 1 {
		return nil, fmt.Errorf("policy: vanilla needs at least one prefill and one decode worker (got %d, %d)", np, nd)
	}
	return &Vanilla{np: np, nd: nd}, nil
}

// Begin picks the next P and D round robin.
func (v *Vanilla) Begin(ds *Dispatch) Step {
	p, d := v.rrP, v.rrD
	v.rrP = (v.rrP + 1) % v.np
	v.rrD = (v.rrD + 1) % v.nd
	return Step{Action: ActPrefill, P: p, D: d, Mode: ModeVanilla}
}

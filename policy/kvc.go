package policy

import (
	"fmt"
	"math"

	"github.com/pdemu/pdemu/workload"
)

// KVCConfig holds the KVC-Router hyperparameters.
type KVCConfig struct {
	Alpha     float64 // α, sticky bonus
	TauReject int     // τ_reject
	Epsilon   int     // ε, admission tries before Fallback
	V1        bool    // omit reset-on-success (Algorithm 3 line 8)
	// DegenerateFallback selects the reading of the fully-blacklisted case
	// (every untried decode worker has rejects[s,d] ≥ τ_reject). false:
	// Algorithm 1 lines 3–4, ask the least-rejected untried worker for
	// admission. true: the spec's §3.4 account of v1's failure, a degraded
	// round-robin Fallback in which every retry bumps rejects[s,d] of the
	// round-robin worker and moves the session's pin there, so the session
	// thrashes between decode workers and never regains a residency while
	// its counters stay at or above τ_reject (forever without
	// reset-on-success). topology makes it the default when V1 is set.
	DegenerateFallback bool
	Prefill            int // number of prefill workers
	Decode             int // number of decode workers

	// Opt-in remedies for the concentration of sessions on the decode
	// workers that hold a shared first block (docs/MODEL.md, "Routing
	// remedies"). Both off (the zero value) is Algorithm 1 literally.

	// OwnOverlap counts line 6's overlap over the session's own resident
	// prefix only: overlap[d] is the number of leading blocks the request
	// shares with what the router recorded for this session on d, so
	// blocks other sessions left on d (a shared system prompt) no longer
	// draw new sessions to d.
	OwnOverlap bool
	// LoadFloor > 0 bounds the load of the workers Route may choose: the
	// floor is the least inflight among the candidates (untried, not
	// blacklisted), and a candidate other than the session's pinned worker
	// is skipped when its inflight is floor + LoadFloor or more. 0: off.
	LoadFloor int
}

// KVC is the KVC-Router (Algorithms 1 and 3; Algorithm 2 is Admit).
//
// State follows §2.3 of the spec: resident[d] (the ResidentIndex), pin[s],
// inflight[d], assigned[d] and rejects[s,d]. inflight[d] is incremented on
// every successful admission and on every Fallback sent to d, and
// decremented by Finished; assigned[d] counts the same events but is never
// decremented.
type KVC struct {
	cfg       KVCConfig
	sess      map[int32]*sessState
	inflight  []int
	assigned  []int64
	index     *ResidentIndex
	rrP, rrD  int
	overlap   []int    // scratch: line 6's overlap (see ovDS)
	noRejects []int32  // all zero: the rejects of a session never seen
	noBlack   []uint64 // all zero: its blacklist

	// ver counts the changes to what line 6's overlap reads (the index,
	// a session's pin or resident set). overlap holds the overlap of
	// request ovReq of dispatch ovDS at version ovVer (computed ovHow),
	// so that Explain and the Route of the same try compute it once,
	// whichever comes first (the routing log explains every try). The
	// pointers keep both alive, so neither address can be reused for
	// another request while the entry stands.
	ver   uint64
	ovDS  *Dispatch
	ovReq *workload.Request
	ovVer uint64
	ovHow routeHow

	// Route counters (see RouteStats).
	routes, chained int64

	// Session states not in use: new ones carved from a chunk
	// (sessChunk states and their rejects and blacklist rows in three
	// allocations), and forgotten ones (Forget), reused first.
	sessNew  []sessState
	sessFree []*sessState
}

// NewKVC validates cfg and returns a router with empty state.
func NewKVC(cfg KVCConfig) (*KVC, error) {
	if cfg.Decode < 1 || cfg.Prefill < 1 {
		return nil, fmt.Errorf("policy: kvc needs at least one prefill and one decode worker (got %d, %d)", cfg.Prefill, cfg.Decode)
	}
	if cfg.TauReject < 1 || cfg.Epsilon < 1 || !(cfg.Alpha >= 0) || math.IsInf(cfg.Alpha, 1) {
		return nil, fmt.Errorf("policy: kvc needs tau_reject >= 1, epsilon >= 1, finite alpha >= 0 (got %d, %d, %g)", cfg.TauReject, cfg.Epsilon, cfg.Alpha)
	}
	if cfg.LoadFloor < 0 {
		return nil, fmt.Errorf("policy: kvc needs load_floor >= 0 (got %d)", cfg.LoadFloor)
	}
	return &KVC{
		cfg:       cfg,
		sess:      make(map[int32]*sessState),
		inflight:  make([]int, cfg.Decode),
		assigned:  make([]int64, cfg.Decode),
		index:     NewResidentIndex(cfg.Decode),
		overlap:   make([]int, cfg.Decode),
		noRejects: make([]int32, cfg.Decode),
		noBlack:   make([]uint64, (cfg.Decode+63)>>6),
	}, nil
}

// Config returns the router's configuration.
func (k *KVC) Config() KVCConfig { return k.cfg }

// Index exposes the resident estimate (read-only use).
func (k *KVC) Index() *ResidentIndex { return k.index }

// Inflight returns the router's inflight count for d.
func (k *KVC) Inflight(d int) int { return k.inflight[d] }

// Assigned returns the router's assigned count for d.
func (k *KVC) Assigned(d int) int64 { return k.assigned[d] }

// RouteStats reports how many Route calls computed overlaps and how many
// of them used the chain shortcut (a profiling aid).
func (k *KVC) RouteStats() (routes, chained int64) { return k.routes, k.chained }

// Route is Algorithm 1 over the decode workers not in ds's tried set. It
// returns -1 when every worker was tried.
//
// Reading of the spec's lines: line 1 blacklists d when rejects[s,d] ≥
// τ_reject; line 4's degenerate branch (no untried worker left outside the
// blacklist) returns the untried worker with the fewest rejects; line 6's
// overlap counts the request's blocks (each position once, duplicates
// included) recorded on d; line 11's lexicographic argmax breaks full ties
// by the lowest worker index. Route does not change the router's state.
func (k *KVC) Route(ds *Dispatch) int {
	d, _, how := k.route(ds, k.sess[ds.Req.Session], k.overlap, true)
	if how != routeNoOverlap {
		k.routes++
		if how == routeChained {
			k.chained++
		}
	}
	return d
}

// RouteShared is Route for concurrent readers under a shared lock: it
// changes nothing (RouteStats does not count) and uses the caller's
// scratch ov (len ≥ Decode). fast reports whether Begin, given ds.Tries <
// Epsilon, would do nothing but ask d for admission: the session is known,
// a worker was found and line 4's degenerate branch was not taken.
func (k *KVC) RouteShared(ds *Dispatch, ov []int) (d int, fast bool) {
	st := k.sess[ds.Req.Session]
	d, degenerate, _ := k.route(ds, st, ov, false)
	return d, st != nil && d >= 0 && !degenerate
}

type routeHow uint8

const (
	routeNoOverlap routeHow = iota // no candidate or degenerate branch
	routeScanned                   // every block looked up
	routeChained                   // chain shortcut
)

// route is Route without side effects: st may be nil (a session never
// seen) and ov is the caller's scratch (len ≥ Decode). It also reports
// whether the degenerate branch was taken. With cached, ov is k.overlap
// and line 6 reuses (or leaves) the overlap cached for ds (see ovDS).
func (k *KVC) route(ds *Dispatch, st *sessState, ov []int, cached bool) (best int, degenerate bool, how routeHow) {
	nd := k.cfg.Decode
	pin, rej, black := -1, k.noRejects, k.noBlack
	if st != nil {
		pin, rej, black = int(st.pin), st.rejects, st.black
	}
	rej = rej[:nd]
	tried, nw := ds.tried, k.words()
	// Lines 1–4: blacklist; degenerate branch returns the least-rejected
	// untried worker.
	found := false
	for w := 0; w < nw && !found; w++ {
		found = k.candidates(black, tried, w) != 0
	}
	if !found {
		best = -1
		for w := 0; w < nw; w++ {
			for m := k.untried(tried, w); m != 0; m &= m - 1 {
				if d := firstMember(w, m); best < 0 || rej[d] < rej[best] {
					best = d
				}
			}
		}
		return best, best >= 0, routeNoOverlap
	}
	// Line 6.
	ov = ov[:nd]
	if cached {
		how = k.cachedOverlap(ds, st)
	} else {
		how = k.lineSix(ds, st, pin, ov)
	}
	// Lines 5–11: lexicographic max of (overlap+α·sticky, sticky, −inflight,
	// −assigned). Only the pinned worker has sticky = 1; for every other
	// candidate the main term is exactly its overlap (α is finite), so they
	// are ranked by integers, and the pinned worker is compared last: with
	// sticky as tie-1 it wins any tie on the main term.
	inflight, assigned := k.inflight[:nd], k.assigned[:nd]
	ceiling := math.MaxInt // LoadFloor: unpinned candidates need inflight < ceiling
	if k.cfg.LoadFloor > 0 {
		ceiling = k.loadCeiling(rej, tried)
	}
	best = -1
	var bo, bi int
	var ba int64
	pinOK := false
	for w := 0; w < nw; w++ {
		for m := k.candidates(black, tried, w); m != 0; m &= m - 1 {
			d := firstMember(w, m)
			if d == pin {
				pinOK = true
				continue
			}
			o, i, a := ov[d], inflight[d], assigned[d]
			if i >= ceiling {
				continue
			}
			if best < 0 || o > bo || (o == bo && (i < bi || (i == bi && a < ba))) {
				best, bo, bi, ba = d, o, i, a
			}
		}
	}
	if pinOK && (best < 0 || float64(ov[pin])+k.cfg.Alpha >= float64(bo)) {
		best = pin
	}
	return best, false, how
}

// lineSix sets ov (len Decode) to line 6's overlap of ds for session
// state st (nil: never seen) pinned to pin, and says how it was counted.
func (k *KVC) lineSix(ds *Dispatch, st *sessState, pin int, ov []int) routeHow {
	clear(ov)
	if k.cfg.OwnOverlap {
		if st != nil {
			for _, d := range st.resident {
				ov[d] = k.index.OwnedPrefix(int(d), ds.Req.Session, ds.Req.Blocks)
			}
		}
		return routeScanned
	}
	if k.index.OverlapOwned(ds.Req.Blocks, pin, ds.Req.Session, ov) > 0 {
		return routeChained
	}
	return routeScanned
}

// cachedOverlap makes k.overlap line 6's overlap of ds (st is its
// session's state, nil if never seen), computing it unless it already
// holds it, and says how it was counted.
func (k *KVC) cachedOverlap(ds *Dispatch, st *sessState) routeHow {
	if k.ovDS == ds && k.ovReq == ds.Req && k.ovVer == k.ver {
		return k.ovHow
	}
	pin := -1
	if st != nil {
		pin = int(st.pin)
	}
	how := k.lineSix(ds, st, pin, k.overlap[:k.cfg.Decode])
	k.ovDS, k.ovReq, k.ovVer, k.ovHow = ds, ds.Req, k.ver, how
	return how
}

// loadCeiling is LoadFloor's bound: the least inflight among the
// candidates (not blacklisted, not tried; at least one exists) plus
// LoadFloor.
func (k *KVC) loadCeiling(rej []int32, tried []uint64) int {
	tau := int32(k.cfg.TauReject)
	floor := math.MaxInt
	for d, i := range k.inflight {
		if rej[d] >= tau || i >= floor {
			continue
		}
		if w := d >> 6; w < len(tried) && tried[w]&(1<<(uint(d)&63)) != 0 {
			continue
		}
		floor = i
	}
	return floor + k.cfg.LoadFloor
}

// Begin starts Algorithm 3 for a new request.
func (k *KVC) Begin(ds *Dispatch) Step { return k.next(ds) }

func (k *KVC) next(ds *Dispatch) Step {
	st := k.state(ds.Req.Session)
	if ds.Tries < k.cfg.Epsilon {
		d, degenerate, how := k.route(ds, st, k.overlap, true)
		if how != routeNoOverlap {
			k.routes++
			if how == routeChained {
				k.chained++
			}
		}
		if degenerate {
			st.stats.Degenerate++
			if k.cfg.DegenerateFallback {
				return k.degenerateFallback(st)
			}
		}
		if d >= 0 {
			return Step{Action: ActAdmit, D: d}
		}
	}
	return k.fallback(st)
}

// fallback is lines 25–29: vanilla P/D through round-robin P and D.
func (k *KVC) fallback(st *sessState) Step {
	st.stats.Fallbacks++
	p, d := k.rrP, k.rrD
	k.rrP = (k.rrP + 1) % k.cfg.Prefill
	k.rrD = (k.rrD + 1) % k.cfg.Decode
	k.inflight[d]++
	k.assigned[d]++
	return Step{Action: ActPrefill, P: p, D: d, Mode: ModeFallback, Unadmitted: true}
}

// degenerateFallback is §3.4's degraded round-robin Fallback: the
// round-robin decode worker's counter is bumped (the retry counts as a
// rejection there) and the session's pin moves to it.
func (k *KVC) degenerateFallback(st *sessState) Step {
	step := k.fallback(st)
	k.setRejects(st, step.D, st.rejects[step.D]+1)
	if st.pin >= 0 && int(st.pin) != step.D {
		st.stats.Migrations++
	}
	st.pin = int32(step.D)
	k.ver++
	return step
}

// Admitted handles a positive admission reply from d (lines 7–19).
func (k *KVC) Admitted(ds *Dispatch, d int, mode Mode) Step {
	r := ds.Req
	st := k.state(r.Session)
	if !k.cfg.V1 {
		k.setRejects(st, d, 0) // reset-on-success
	}
	if st.pin >= 0 && int(st.pin) != d {
		st.stats.Migrations++
	}
	st.pin = int32(d)
	k.ver++ // the pin and the index change
	k.inflight[d]++
	k.assigned[d]++
	// Request.Blocks is immutable once emitted (workload.Request).
	k.index.SetImmutable(d, r.Session, r.Blocks)
	if k.cfg.OwnOverlap {
		st.resident = setMember(st.resident, int32(d), len(r.Blocks) > 0)
	}
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
	k.setRejects(st, d, st.rejects[d]+1)
	if int(st.rejects[d]) == k.cfg.TauReject {
		st.stats.Blacklists++
	}
	st.stats.Rejections++
	ds.markTried(d)
	ds.Tries++
	ds.addReason(reason)
	return k.next(ds)
}

// Finished records that a request dispatched to d ended.
func (k *KVC) Finished(d int) {
	if d >= 0 && d < len(k.inflight) && k.inflight[d] > 0 {
		k.inflight[d]--
	}
}

// Evicted records a decode worker's eviction notice for session s.
func (k *KVC) Evicted(d int, s int32) {
	k.index.Remove(d, s)
	k.ver++
	if k.cfg.OwnOverlap {
		if st := k.sess[s]; st != nil {
			st.resident = setMember(st.resident, int32(d), false)
		}
	}
}

// setMember adds d to the small set list (in) or removes it (!in).
func setMember(list []int32, d int32, in bool) []int32 {
	for i, x := range list {
		if x == d {
			if !in {
				list[i] = list[len(list)-1]
				list = list[:len(list)-1]
			}
			return list
		}
	}
	if in {
		list = append(list, d)
	}
	return list
}

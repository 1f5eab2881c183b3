package policy

import (
	"fmt"
	"math"

	"github.com/pdemu/pdemu/workload"
)

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
	return Step{Action: ActPrefill, P: p, D: d, Mode: ModeVanilla, Unadmitted: true}
}

// seedMode is Seed for a session's first turn and Reseed afterwards.
func seedMode(turn int) Mode {
	if turn == 0 {
		return ModeSeed
	}
	return ModeReseed
}

// ---------------------------------------------------------------- StickyOnly

// StickyOnly isolates session pinning: a session's first request goes to
// the next decode worker round robin (prefilled on the next prefill worker
// round robin, Seed), and every later request of the session is sent to
// that same worker as Direct. No admission, no overlap scoring, no
// migration: the pin never moves, whatever the worker's load or whether it
// still holds the session's KV (if it does not, the Direct request
// re-prefills the whole prompt on the decode worker).
type StickyOnly struct {
	np, nd   int
	rrP, rrD int
	pin      map[int32]int32
}

// NewStickyOnly returns a sticky router over np prefill and nd decode workers.
func NewStickyOnly(np, nd int) (*StickyOnly, error) {
	if np < 1 || nd < 1 {
		return nil, fmt.Errorf("policy: sticky needs at least one prefill and one decode worker (got %d, %d)", np, nd)
	}
	return &StickyOnly{np: np, nd: nd, pin: make(map[int32]int32)}, nil
}

// Begin routes a request: ActRun/Direct on the pin, or ActPrefill/Seed on
// round-robin P and D for a session seen for the first time (Reseed if
// that first request is not turn 0).
func (p *StickyOnly) Begin(ds *Dispatch) Step {
	r := ds.Req
	if d, ok := p.pin[r.Session]; ok {
		return Step{Action: ActRun, P: -1, D: int(d), Mode: ModeDirect, Unadmitted: true}
	}
	pp, d := p.rrP, p.rrD
	p.rrP = (p.rrP + 1) % p.np
	p.rrD = (p.rrD + 1) % p.nd
	p.pin[r.Session] = int32(d)
	return Step{Action: ActPrefill, P: pp, D: d, Mode: seedMode(r.Turn), Unadmitted: true}
}

// Pin returns the decode worker session s is pinned to, or -1.
func (p *StickyOnly) Pin(s int32) int {
	if d, ok := p.pin[s]; ok {
		return int(d)
	}
	return -1
}

// ---------------------------------------------------------------- KVScore

// KVScoreConfig configures KVScore.
type KVScoreConfig struct {
	Alpha   float64 // α, sticky bonus (as in KVC)
	Prefill int
	Decode  int
}

// KVScore isolates KVC's scoring: Algorithm 1 (overlap + α·sticky,
// sticky, −inflight, −assigned; no request is ever rejected, so no
// blacklist) picks the decode worker, and the router decides the mode from
// its own residency estimate, with no admission RPC: Direct if it believes
// the session's KV is on the chosen worker (it sent the session there
// before and has had no eviction notice since), otherwise Seed/Reseed
// through the next prefill worker round robin. A wrong belief (the worker
// evicted the session and the notice is in flight) costs a full prefill on
// the decode worker; nothing stops a worker from being overfilled: that is
// what worker-side admission adds.
type KVScore struct {
	k  *KVC
	on map[int32][]uint64 // session → bitset of workers believed to hold its KV
}

// NewKVScore validates cfg and returns a scoring-only router.
func NewKVScore(cfg KVScoreConfig) (*KVScore, error) {
	k, err := NewKVC(KVCConfig{Alpha: cfg.Alpha, TauReject: math.MaxInt32, Epsilon: 1, Prefill: cfg.Prefill, Decode: cfg.Decode})
	if err != nil {
		return nil, fmt.Errorf("policy: kvscore: %w", err)
	}
	return &KVScore{k: k, on: make(map[int32][]uint64)}, nil
}

// Begin routes a request and records it (pin, inflight, assigned, resident
// blocks) as dispatched.
func (p *KVScore) Begin(ds *Dispatch) Step {
	r := ds.Req
	d := p.k.Route(ds)
	on := p.on[r.Session]
	if on == nil {
		on = make([]uint64, (p.k.cfg.Decode+63)/64)
		p.on[r.Session] = on
	}
	w, m := d>>6, uint64(1)<<(uint(d)&63)
	mode := seedMode(r.Turn)
	if on[w]&m != 0 {
		mode = ModeDirect
	}
	on[w] |= m
	st := p.k.Admitted(ds, d, mode)
	st.Unadmitted = true
	if mode == ModeDirect {
		st.Action, st.P = ActRun, -1
	}
	return st
}

// Finished records that a request sent to d ended.
func (p *KVScore) Finished(d int) { p.k.Finished(d) }

// Evicted records a decode worker's eviction notice for session s.
func (p *KVScore) Evicted(d int, s int32) {
	if on := p.on[s]; on != nil {
		on[d>>6] &^= 1 << (uint(d) & 63)
	}
	p.k.Evicted(d, s)
}

// Pin returns the decode worker session s last went to, or -1.
func (p *KVScore) Pin(s int32) int { return p.k.Pin(s) }

// Stats returns the per-session counters (Migrations only: nothing is
// rejected or falls back).
func (p *KVScore) Stats(s int32) SessionStats { return p.k.Stats(s) }

// Sessions calls f for every session the router has seen.
func (p *KVScore) Sessions(f func(s int32, st SessionStats)) { p.k.Sessions(f) }

// Index exposes the resident estimate (read-only use).
func (p *KVScore) Index() *ResidentIndex { return p.k.Index() }

// ---------------------------------------------------------------- CacheAwareDP

// MissRule picks a worker when the best prefix match is below the cache
// threshold.
type MissRule uint8

const (
	// MissLeastLoaded sends the request to the least loaded worker.
	MissLeastLoaded MissRule = iota
	// MissSmallestCache sends it to the worker with the fewest recorded
	// blocks ("smallest tree", SGLang's approximate-tree rule).
	MissSmallestCache
)

// CacheAwareConfig configures CacheAwareDP. Start from
// DefaultCacheAwareConfig (SGLang's current defaults) or
// LegacyCacheAwareConfig (older SGLang releases).
type CacheAwareConfig struct {
	Workers        int     // fused workers
	CacheThreshold float64 // match ratio needed to follow the cache (current SGLang 0.3; older 0.5)
	BalanceAbs     int     // imbalance needs max−min > BalanceAbs (64; older 32)
	BalanceRel     float64 // … and max > BalanceRel·min (1.5; older 1.0001)
	Miss           MissRule
	// StrictMatch follows the cache only when the match ratio is strictly
	// above CacheThreshold (SGLang's comparison, `match_rate >
	// cache_threshold`); false accepts a ratio equal to the threshold.
	StrictMatch bool
}

// SGLang cache-aware router parameter sets (sgl-router, cache_aware
// policy): the current defaults (cache_threshold 0.3,
// balance_abs_threshold 64, balance_rel_threshold 1.5) and those of older
// releases (0.5, 32, 1.0001). Both send a miss to the worker with the
// smallest tree and compare the match rate strictly.
const (
	SGLangCacheThreshold       = 0.3
	SGLangBalanceAbs           = 64
	SGLangBalanceRel           = 1.5
	SGLangLegacyCacheThreshold = 0.5
	SGLangLegacyBalanceAbs     = 32
	SGLangLegacyBalanceRel     = 1.0001
)

// DefaultCacheAwareConfig returns SGLang's current cache-aware defaults
// for n fused workers: 0.3 / 64 / 1.5, miss → smallest tree, strict >.
func DefaultCacheAwareConfig(n int) CacheAwareConfig {
	return CacheAwareConfig{Workers: n, CacheThreshold: SGLangCacheThreshold, BalanceAbs: SGLangBalanceAbs,
		BalanceRel: SGLangBalanceRel, Miss: MissSmallestCache, StrictMatch: true}
}

// LegacyCacheAwareConfig returns the cache-aware parameters of older SGLang
// releases for n fused workers: 0.5 / 32 / 1.0001, miss → smallest tree,
// strict >.
func LegacyCacheAwareConfig(n int) CacheAwareConfig {
	return CacheAwareConfig{Workers: n, CacheThreshold: SGLangLegacyCacheThreshold, BalanceAbs: SGLangLegacyBalanceAbs,
		BalanceRel: SGLangLegacyBalanceRel, Miss: MissSmallestCache, StrictMatch: true}
}

// ParseMissRule maps the HCL names "smallest_tree" and "least_loaded" to
// a MissRule.
func ParseMissRule(s string) (MissRule, error) {
	switch s {
	case "smallest_tree", "":
		return MissSmallestCache, nil
	case "least_loaded":
		return MissLeastLoaded, nil
	}
	return 0, fmt.Errorf("policy: cache-aware DP miss rule %q unknown (smallest_tree, least_loaded)", s)
}

// CacheAwareStats counts CacheAwareDP's decisions by branch.
type CacheAwareStats struct {
	Balance  int // load imbalanced: least loaded
	CacheHit int // match ratio met the threshold: best-matching worker
	Miss     int // match too short: Miss rule
}

// CacheAwareDP is the cache-aware data-parallel baseline over fused
// workers, after SGLang's router ("cache-aware load-balancing router":
// an approximate radix tree per worker of what was routed there, plus a
// shortest-queue override). Per request, with load[w] the requests routed
// to w and not yet Finished:
//
//  1. imbalanced := max(load) − min(load) > BalanceAbs AND
//     max(load) > BalanceRel · min(load). If imbalanced, pick the least
//     loaded worker (lowest index on ties).
//  2. Otherwise, match[w] = length of the longest prefix of the request's
//     blocks recorded on w, ratio = max(match) / len(blocks) (0 for an
//     empty prompt). If ratio ≥ CacheThreshold (> with StrictMatch), pick
//     the worker with the longest match (ties: least loaded, then lowest
//     index).
//  3. Otherwise apply Miss: fewest recorded blocks (default, SGLang's
//     "smallest tree": get_smallest_tenant, ties to the lowest index) or
//     least loaded (pdemu's rule before issue 10).
//
// In every branch the chosen worker's record for the session is replaced
// by the request's blocks (SGLang inserts the routed text into the chosen
// worker's tree in both modes) and its load is incremented. Differences
// from SGLang, deliberately: the tree is over block hashes instead of
// characters; a session's older prompts are replaced by its newest one (a
// prefix of it in agentic traces) instead of aging out by LRU; eviction
// notices (Evicted) remove entries instead of a periodic size cap (the
// bucket adapter ignores them, as SGLang's router never hears of worker
// evictions). Defaults: SGLang's current 0.3 / 64 / 1.5 with > and the
// smallest-tree miss rule; LegacyCacheAwareConfig has the older set.
type CacheAwareDP struct {
	cfg   CacheAwareConfig
	load  []int
	index *ResidentIndex
	match []int // scratch
	stats CacheAwareStats
	// last is the worker each session was last recorded on: its record
	// there is the hint of LongestPrefix (any record would be correct; the
	// newest shares the longest prefix with the next turn).
	last map[int32]int32
}

// NewCacheAwareDP validates cfg and returns the router.
func NewCacheAwareDP(cfg CacheAwareConfig) (*CacheAwareDP, error) {
	if cfg.Workers < 1 {
		return nil, fmt.Errorf("policy: cache-aware DP needs at least one worker (got %d)", cfg.Workers)
	}
	if !(cfg.CacheThreshold >= 0 && cfg.CacheThreshold <= 1) || cfg.BalanceAbs < 0 || !(cfg.BalanceRel >= 1) || cfg.Miss > MissSmallestCache {
		return nil, fmt.Errorf("policy: cache-aware DP needs 0 <= cache_threshold <= 1, balance_abs_threshold >= 0, balance_rel_threshold >= 1 (got %g, %d, %g)",
			cfg.CacheThreshold, cfg.BalanceAbs, cfg.BalanceRel)
	}
	return &CacheAwareDP{
		cfg: cfg, load: make([]int, cfg.Workers),
		index: NewResidentIndex(cfg.Workers), match: make([]int, cfg.Workers),
		last: make(map[int32]int32),
	}, nil
}

// Begin routes a request to a fused worker: Step{ActRun, D: w, Mode: ModeFused}.
func (p *CacheAwareDP) Begin(ds *Dispatch) Step {
	r := ds.Req
	w := p.pick(r, nil)
	p.load[w]++
	p.Record(w, r)
	return Step{Action: ActRun, P: -1, D: w, Mode: ModeFused, Unadmitted: true}
}

// BeginMatched is Begin for a caller that has just set match with
// LongestPrefix(r, match) (nothing recorded since): it picks the same
// worker without computing the match again, counts its load and records
// r's blocks there as if r were not its session's last turn (the caller
// records the turn itself, Record, once it is placed). It returns the
// worker; match is not changed.
func (p *CacheAwareDP) BeginMatched(r *workload.Request, match []int) int {
	w := p.pick(r, match)
	p.load[w]++
	p.record(w, r.Session, r.Blocks, false)
	return w
}

// Record replaces worker w's record of r's session by r's blocks (what
// Begin does for the worker it picks).
func (p *CacheAwareDP) Record(w int, r *workload.Request) {
	p.record(w, r.Session, r.Blocks, r.Last)
}

func (p *CacheAwareDP) record(w int, s int32, blocks []uint64, last bool) {
	p.index.SetImmutable(w, s, blocks) // Request.Blocks is immutable
	switch {
	case last: // the session ends: no next turn to hint
		delete(p.last, s)
	case len(blocks) > 0:
		p.last[s] = int32(w)
	}
}

// LongestPrefix sets out[w] (len(out) = workers) to the length of the
// longest prefix of r's blocks recorded on worker w: the index's
// LongestPrefix, computed from r's session's newest record as
// LongestPrefixOwned does.
func (p *CacheAwareDP) LongestPrefix(r *workload.Request, out []int) {
	d := -1
	if w, ok := p.last[r.Session]; ok {
		d = int(w)
	}
	p.index.LongestPrefixOwned(r.Blocks, d, r.Session, out)
}

// pick chooses r's worker; match, when not nil, is LongestPrefix(r) (else
// it is computed into p.match when needed).
func (p *CacheAwareDP) pick(r *workload.Request, match []int) int {
	blocks := r.Blocks
	lo, hi := p.load[0], p.load[0]
	for _, l := range p.load[1:] {
		lo, hi = min(lo, l), max(hi, l)
	}
	if hi-lo > p.cfg.BalanceAbs && float64(hi) > p.cfg.BalanceRel*float64(lo) {
		p.stats.Balance++
		return p.leastLoaded(nil, 0)
	}
	best := 0
	switch {
	case len(blocks) == 0:
		match = p.match
		clear(match)
	case match == nil:
		match = p.match
		p.LongestPrefix(r, match)
	}
	for _, m := range match {
		best = max(best, m)
	}
	ratio := 0.0
	if len(blocks) > 0 {
		ratio = float64(best) / float64(len(blocks))
	}
	if ratio > p.cfg.CacheThreshold || (!p.cfg.StrictMatch && ratio == p.cfg.CacheThreshold) {
		p.stats.CacheHit++
		return p.leastLoaded(match, best)
	}
	p.stats.Miss++
	if p.cfg.Miss == MissSmallestCache {
		w := 0
		for i := 1; i < len(p.load); i++ {
			if p.index.WorkerBlocks(i) < p.index.WorkerBlocks(w) {
				w = i
			}
		}
		return w
	}
	return p.leastLoaded(nil, 0)
}

// leastLoaded returns the least loaded worker among those with
// match[w] == m (all workers if match is nil); ties go to the lowest index.
func (p *CacheAwareDP) leastLoaded(match []int, m int) int {
	w := -1
	for i, l := range p.load {
		if match != nil && match[i] != m {
			continue
		}
		if w < 0 || l < p.load[w] {
			w = i
		}
	}
	return w
}

// Finished records that a request sent to w ended.
func (p *CacheAwareDP) Finished(w int) {
	if w >= 0 && w < len(p.load) && p.load[w] > 0 {
		p.load[w]--
	}
}

// Evicted records that worker w dropped session s's cached prefix.
func (p *CacheAwareDP) Evicted(w int, s int32) { p.index.Remove(w, s) }

// Load returns the router's outstanding-request count for w.
func (p *CacheAwareDP) Load(w int) int { return p.load[w] }

// Stats returns the decision counters.
func (p *CacheAwareDP) Stats() CacheAwareStats { return p.stats }

// Index exposes the per-worker prefix record (read-only use).
func (p *CacheAwareDP) Index() *ResidentIndex { return p.index }

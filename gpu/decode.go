package gpu

import (
	"fmt"
	"math"
	"time"

	"github.com/pdemu/pdemu/policy"
)

// DecodeConfig configures a decode worker.
type DecodeConfig struct {
	Name          string
	Budget        int     // K_d, KV pool in tokens
	Rho           float64 // admission high-water mark ρ
	TauAppend     int     // τ_append
	ReserveOutput bool    // admission reserves output tokens too
	// NetCapacity counts a resident session's own KV once: the check becomes
	// used − resident(s) + input_len ≤ ρ·K_d. Literal Algorithm 2
	// (NetCapacity false) adds input_len, which includes the resident
	// prefix, on top of used, which counts it already.
	NetCapacity bool
	MaxRunning  int // decode batch cap
	// ChunkTokens is the chunked-prefill budget: an append-prefill runs in
	// chunks of at most this many tokens, each in one forward pass together
	// with one decode step of the running batch (default 16384).
	ChunkTokens int
	// IdleEvictAfter: admission may evict a session only after it has been
	// idle this long (it is probably finished); a younger idle session is
	// probably thinking and about to come back. Default 10s.
	IdleEvictAfter time.Duration
	// ResidentAppend measures append_len for Algorithm 2's τ_append test
	// against the session's last admitted prompt on this worker (pdemu
	// before issue 10). false (default) uses the spec's definition (§2.2):
	// the tokens new with respect to the session's previous turn
	// (Request.AppendLen), whatever this worker last saw. The append-prefill
	// always computes what the resident KV does not cover.
	ResidentAppend bool
}

// EventKind says what happened on a worker.
type EventKind uint8

// Event kinds.
const (
	EvFirstToken    EventKind = iota + 1 // Job entered the decode batch with its first token
	EvDone                               // Job produced its last token
	EvFailed                             // Job failed (Job.Failed says why)
	EvEvicted                            // Session's KV was evicted (Job is nil)
	EvBlocksEvicted                      // prefix-cache blocks were evicted (Blocks; fused workers)
)

// Event is something a worker did at time At.
type Event struct {
	Kind    EventKind
	Job     *Job
	Session int32
	Blocks  []uint64
	At      time.Duration
	// EvEvicted only (gpu/evict.go): the KV tokens dropped, why, the
	// request whose room it made (EvictCapacity) or whose transfer failed
	// (EvictTransferFailed), -1 otherwise, and the session's name.
	Tokens int
	Cause  EvictCause
	For    int64
	Name   string
}

// Failure reasons raised by the decode worker.
const (
	ReasonExceedsPool = "exceeds-kv-pool" // the request alone does not fit in ρ·K_d
	// ReasonExceedsContext: prompt + output tokens exceed the model's
	// max_model_len (vLLM refuses such a request before scheduling it).
	ReasonExceedsContext = "exceeds-context"
)

type residency struct {
	tokens  int      // KV tokens held (reserved) for the session
	name    string   // the session's name (Request.SessionName)
	blocks  []uint64 // prompt blocks of the session's last admitted request
	active  int      // requests of the session admitted and not ended
	lastUse time.Duration
	// Idle sessions (active == 0) are linked in the worker's idle list in
	// eviction order, (lastUse, id) ascending; busy ones are unlinked.
	id         int32
	prev, next *residency
}

// DecodeWorker is a decode worker's pure state machine: SessionAwareCache
// bookkeeping (session → resident tokens), Algorithm 2 admission, LRU
// eviction of idle sessions under pressure, append-prefill for Direct
// requests and continuous batching of decodes.
//
// Timing model (continuous batching with chunked prefill): while an
// append-prefill is pending the GPU runs mixed passes, each prefilling a
// chunk of at most ChunkTokens tokens of one request and decoding one token
// for every running request, costed by Cost.StepTime of that pass; without
// prefill work every running request advances one token per decode step of
// Cost.DecodeStepTime(batch, total context). Decode-only stretches are
// modelled analytically between batch changes: a batch change costs
// O(batch) work and no per-token events exist.
//
// Eviction: when admission needs room, sessions idle (no request in flight)
// for at least IdleEvictAfter, other than the requester, are evicted least
// recently used first (ties by session index) until the request fits; if it
// still does not fit the request is rejected (Algorithm 2). A Fallback or
// Vanilla request whose KV has arrived may evict any idle session, so it
// never waits on memory that nothing would free. When a session's final
// turn (Request.Last) ends, its KV is freed at once (the client closes the
// session). Each eviction is reported as an EvEvicted event.
type DecodeWorker struct {
	cfg  DecodeConfig
	cost Cost
	cap  int

	used    int
	maxUsed int
	sess    map[int32]*residency
	idle    residency   // sentinel of the idle list (see residency)
	resFree []residency // newResidency's slab

	running  []*Job
	prefillQ []*Job // Direct requests waiting for their append-prefill
	ready    []*Job // first token ready, waiting for memory or a batch slot
	// readyGo counts the jobs on ready that need no room (noRoomNeeded):
	// behind a job blocked for memory, drainReady stops as soon as none of
	// them is left instead of walking the whole queue.
	readyGo  int
	waitRoom []*Job // unadmitted session requests waiting for KV room (FIFO)
	cur      *Job   // append-prefill in progress
	curEnd   time.Duration
	curChunk int           // prefill tokens of the pass in flight
	curDec   int           // running[:curDec] decode one token in that pass
	last     time.Duration // decode progress is accounted up to here
	out      []Event
	// The running batch's aggregates (decode_batch.go: context,
	// minRemaining), valid when aggOK, and the last decode step time asked
	// of perf (stepTime; perf is cost when it is a Perf, nil otherwise).
	ctx     int64
	minRem  float64
	aggOK   bool
	perf    *Perf
	stepN   int
	stepCtx int64
	stepT   time.Duration
	stepOK  bool
	doneBuf []*Job // retire's scratch
	// afterFinish, when set, runs after requests finished at t (a fused
	// worker admits waiting requests into the memory they freed).
	afterFinish func(t time.Duration)
	freed       bool // a request finished at freedAt: waiting ones may fit
	freedAt     time.Duration
}

// NewDecodeWorker validates cfg.
func NewDecodeWorker(cfg DecodeConfig, cost Cost) (*DecodeWorker, error) {
	if cfg.Budget <= 0 || cfg.Rho <= 0 || cfg.Rho > 1 || cfg.TauAppend < 0 || cost == nil {
		return nil, fmt.Errorf("gpu: decode worker %q needs budget > 0, 0 < rho <= 1, tau_append >= 0 and a cost model", cfg.Name)
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = 256
	}
	if cfg.ChunkTokens <= 0 {
		cfg.ChunkTokens = 16384
	}
	if cfg.IdleEvictAfter == 0 {
		cfg.IdleEvictAfter = 10 * time.Second
	}
	w := &DecodeWorker{
		cfg: cfg, cost: cost,
		cap:  int(math.Floor(cfg.Rho * float64(cfg.Budget))),
		sess: make(map[int32]*residency),
	}
	w.idle.prev, w.idle.next = &w.idle, &w.idle
	if p, ok := cost.(Perf); ok {
		w.perf = &p // pure: stepTime may keep its last answer
	}
	return w, nil
}

// newResidency records session id as resident with one active request
// (not idle, so not in the idle list).
//
// Residencies come from a slab of resSlab (one allocation each was most of
// the worker's share of a replay's). None is ever reused: a dropped one
// may still be read by its caller (evictFor reports its id) and is freed
// with its slab.
func (w *DecodeWorker) newResidency(id int32) *residency {
	if len(w.resFree) == 0 {
		w.resFree = make([]residency, resSlab)
	}
	s := &w.resFree[0]
	w.resFree = w.resFree[1:]
	s.id = id
	w.sess[id] = s
	return s
}

// resSlab is how many residencies newResidency allocates at once.
const resSlab = 32

// dropResidency forgets session id (resident as s).
func (w *DecodeWorker) dropResidency(id int32, s *residency) {
	unlinkIdle(s)
	delete(w.sess, id)
	w.setUsed(w.used - s.tokens)
}

// activate counts one more request of s in flight (s leaves the idle list).
func activate(s *residency) {
	s.active++
	unlinkIdle(s)
}

func unlinkIdle(s *residency) {
	if s.prev != nil {
		s.prev.next, s.next.prev = s.next, s.prev
		s.prev, s.next = nil, nil
	}
}

// linkIdle puts s, now idle, in the idle list. lastUse only grows, so s
// usually goes at the tail, or just before sessions that went idle at the
// same instant with a larger id.
func (w *DecodeWorker) linkIdle(s *residency) {
	at := w.idle.prev
	for at != &w.idle && (at.lastUse > s.lastUse || at.lastUse == s.lastUse && at.id > s.id) {
		at = at.prev
	}
	s.prev, s.next = at, at.next
	at.next.prev = s
	at.next = s
}

// Used is the KV tokens held now; Cap is ρ·K_d; MaxUsed the high-water mark.
func (w *DecodeWorker) Used() int    { return w.used }
func (w *DecodeWorker) Cap() int     { return w.cap }
func (w *DecodeWorker) MaxUsed() int { return w.maxUsed }

// Queued is the number of requests waiting (append-prefill or a slot).
func (w *DecodeWorker) Queued() int { return len(w.prefillQ) + len(w.ready) + len(w.waitRoom) }

// Running is the number of requests on the GPU (decoding or prefilling).
func (w *DecodeWorker) Running() int {
	n := len(w.running)
	if w.cur != nil {
		n++
	}
	return n
}

// Resident reports whether session s has KV on this worker.
func (w *DecodeWorker) Resident(s int32) bool { return w.sess[s] != nil }

// Sessions is the number of resident sessions.
func (w *DecodeWorker) Sessions() int { return len(w.sess) }

func (w *DecodeWorker) setUsed(u int) {
	w.used = u
	if u > w.maxUsed {
		w.maxUsed = u
	}
}

// realAppend returns the prompt tokens of j not covered by s's resident KV.
func realAppend(j *Job, s *residency) int {
	r := j.Req
	if s == nil {
		return r.InputLen
	}
	common := sharedPrefix(s.blocks, r.Blocks)
	matched := common * r.BlockTokens
	if common == len(s.blocks) {
		// The whole previous prompt matches: the resident KV (previous prompt
		// and its output) is a prefix of this prompt.
		matched = s.tokens
	}
	if r.ReuseCap > 0 {
		matched = min(matched, r.ReuseCap) // serve: the answer was not sent back as given
	}
	matched = min(matched, r.InputLen-1) // at least one token is computed
	return r.InputLen - matched
}

// sharedPrefix is the length of the longest common prefix of a and b. A
// session's turns usually share one append-only blocks array (the
// generator's, and the loaders' for shared-prefix traces): a and b
// starting at the same element then agree up to the shorter one without
// comparing them (the same memory).
func sharedPrefix(a, b []uint64) int {
	n := min(len(a), len(b))
	if n > 0 && &a[0] == &b[0] {
		return n
	}
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// Admit is Algorithm 2 followed, on success, by reserving the request's KV.
// A Direct request is queued for append-prefill immediately; a Seed or
// Reseed request waits for Arrive. It returns the mode (ModeNone when
// rejected) and the rejection reason.
func (w *DecodeWorker) Admit(now time.Duration, j *Job) (policy.Mode, string) {
	w.advance(now)
	r := j.Req
	s := w.sess[r.Session]
	app := realAppend(j, s)
	reserve := 0
	if w.cfg.ReserveOutput {
		reserve = r.OutputLen
	}
	specApp := app
	if s != nil && !w.cfg.ResidentAppend && r.Turn > 0 {
		specApp = r.AppendLen
	}
	in := policy.AdmitInput{
		Resident: s != nil, Turn: r.Turn, AppendLen: specApp, InputLen: r.InputLen,
		Reserve: reserve, Budget: w.cfg.Budget, Rho: w.cfg.Rho, TauAppend: w.cfg.TauAppend,
	}
	if !(s != nil && specApp > w.cfg.TauAppend) {
		// Make room by evicting idle sessions, unless the answer is already no.
		w.evictFor(now, r.Session, r.InputLen+reserve, w.cfg.IdleEvictAfter, r.ID)
	}
	in.Used = w.used
	if s != nil && w.cfg.NetCapacity {
		// The session's resident prefix is part of input_len: count it once.
		in.Used -= s.tokens
	}
	mode, reason := policy.Admit(in)
	if mode == policy.ModeNone {
		return mode, reason
	}
	j.Mode, j.Admitted = mode, now
	j.DGot, j.KVReserved = now, now
	footprint := r.InputLen + reserve
	if s == nil {
		s = w.newResidency(r.Session)
		s.name = r.SessionName
	}
	if footprint > s.tokens {
		w.setUsed(w.used + footprint - s.tokens)
		s.tokens = footprint
	}
	s.blocks = r.Blocks
	activate(s)
	s.lastUse = now
	j.footprint = 0 // owned by the session
	if mode == policy.ModeDirect {
		j.PrefillTokens = app
		j.CachedTokens = r.InputLen - app
		w.prefillQ = append(w.prefillQ, j)
		w.kick(now)
	}
	return mode, ""
}

// evictFor evicts sessions idle for at least minIdle, other than keep, LRU
// first (ties by session index), until used+need ≤ cap or no such session
// is left. The idle list is in that order, so each eviction is O(1).
//
// Each eviction is an EvEvicted with cause EvictCapacity for request forReq.
func (w *DecodeWorker) evictFor(now time.Duration, keep int32, need int, minIdle time.Duration, forReq int64) {
	for w.used+need > w.cap {
		vs := w.idle.next
		if vs != &w.idle && vs.id == keep {
			vs = vs.next
		}
		if vs == &w.idle || now-vs.lastUse < minIdle {
			return
		}
		w.evicted(now, vs, EvictCapacity, forReq)
		w.dropResidency(vs.id, vs)
	}
}

// Arrive hands the worker a request whose KV has arrived from a prefill
// worker. Seed/Reseed requests were admitted (their KV is reserved);
// Fallback and Vanilla requests reserve their KV now, waiting for room if
// needed, and free it when they end.
//
// A job whose transfer failed (j.Failed set by the link) ends here as
// failed: it takes no memory or batch slot, and a Seed/Reseed releases the
// session's reservation, dropping the residency (its KV never arrived)
// with an EvEvicted so that the router forgets it too.
func (w *DecodeWorker) Arrive(now time.Duration, j *Job) {
	w.advance(now)
	j.DGot = now
	if j.Failed != "" {
		// An unadmitted Seed/Reseed never counted in the session's
		// residency (it would on arrival, admitRoom): nothing to release.
		if j.Mode != policy.ModeFallback && j.Mode != policy.ModeVanilla && !j.Unadmitted {
			if s := w.sess[j.Req.Session]; s != nil {
				s.active--
				if s.active <= 0 {
					w.evicted(now, s, EvictTransferFailed, j.Req.ID)
					w.dropResidency(j.Req.Session, s)
					// The reservation's memory is free: requests waiting
					// for memory go in now (they used to wait for a
					// finish that, on an idle worker, never came; the
					// request was never ended).
					w.freed, w.freedAt = true, now
				}
			}
		}
		j.Done = now
		w.out = append(w.out, Event{Kind: EvFailed, Job: j, At: now})
		w.drainReady(now)
		return
	}
	if j.Unadmitted && (j.Mode == policy.ModeSeed || j.Mode == policy.ModeReseed) {
		// Nobody admitted it: its KV becomes the session's residency once
		// there is room for it.
		w.waitRoom = append(w.waitRoom, j)
		w.admitRoom(now)
		return
	}
	if j.Mode == policy.ModeFallback || j.Mode == policy.ModeVanilla {
		j.footprint = j.Req.InputLen + j.Req.OutputLen
		if j.footprint > w.cap {
			j.Failed = ReasonExceedsPool
			j.Done = now
			w.out = append(w.out, Event{Kind: EvFailed, Job: j, At: now})
			return
		}
	}
	w.pushReady(j)
	w.drainReady(now)
}

// Run serves j Direct without an admission check (admission-free
// policies): the append-prefill covers whatever of the prompt the session's
// resident KV does not (the whole prompt if the session is not resident),
// and the request waits FIFO until its KV fits, evicting idle sessions.
func (w *DecodeWorker) Run(now time.Duration, j *Job) {
	w.advance(now)
	j.Mode, j.DGot = policy.ModeDirect, now
	app := realAppend(j, w.sess[j.Req.Session])
	j.PrefillTokens, j.CachedTokens = app, j.Req.InputLen-app
	w.waitRoom = append(w.waitRoom, j)
	w.admitRoom(now)
}

// admitRoom gives waiting unadmitted requests their KV (as session
// residency) in FIFO order while it fits; one that can never fit fails.
func (w *DecodeWorker) admitRoom(now time.Duration) {
	for len(w.waitRoom) > 0 {
		j := w.waitRoom[0]
		r := j.Req
		s := w.sess[r.Session]
		footprint := r.InputLen + r.OutputLen
		need := footprint
		if s != nil {
			need = max(0, footprint-s.tokens)
		}
		if footprint > w.cap {
			w.waitRoom = dropFront(w.waitRoom, 1)
			j.Failed, j.Done = ReasonExceedsPool, now
			w.out = append(w.out, Event{Kind: EvFailed, Job: j, At: now})
			continue
		}
		if w.used+need > w.cap {
			w.evictFor(now, r.Session, need, 0, r.ID)
			if w.used+need > w.cap {
				return
			}
		}
		w.waitRoom = dropFront(w.waitRoom, 1)
		if j.Mode == policy.ModeDirect {
			// What the session holds now (it may have been evicted while
			// this request waited).
			app := realAppend(j, s)
			j.PrefillTokens, j.CachedTokens = app, r.InputLen-app
		}
		if s == nil {
			s = w.newResidency(r.Session)
			s.name = r.SessionName
		}
		w.setUsed(w.used + need)
		s.tokens += need
		s.blocks = r.Blocks
		activate(s)
		s.lastUse = now
		j.Admitted, j.KVReserved = now, now
		if j.Mode == policy.ModeDirect {
			w.prefillQ = append(w.prefillQ, j)
			w.kick(now)
		} else {
			w.pushReady(j)
			w.drainReady(now)
		}
	}
}

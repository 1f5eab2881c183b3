package cluster

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/internal/freelist"
	"github.com/pdemu/pdemu/internal/idmap"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
)

// What the nodes report besides their messages, for the outputs: the jobs
// still in the cluster (partial runs), each NIC's load (links.csv), the
// P/D router's events (router_windows.csv) and its decisions
// (routing_log.jsonl). Everything here is read after the run, once the
// runtime stopped delivering; nothing changes a node's behaviour.

// ---------------------------------------------------------------- in flight

// InFlight returns the jobs released but not ended, in request id order:
// the requests a partial run left unfinished. A job is in flight from the
// driver's Release until the collector records it (a job whose end was
// recorded but whose RequestEnded had not reached the driver yet is not).
// Call it after the runtime stopped delivering.
func (c *Cluster) InFlight() []*gpu.Job {
	out := make([]*gpu.Job, 0, c.driver.live.Len())
	c.driver.live.Ascend(func(id int64, j *gpu.Job) bool {
		if !c.collector.col.Seen(id) {
			out = append(out, j)
		}
		return true
	})
	return out
}

// Released is the number of requests the driver released (a Job created
// and handed to the router).
func (c *Cluster) Released() int { return c.driver.released }

// track records a released job (driver).
func (n *driverNode) track(j *gpu.Job) {
	n.live.Put(j.Req.ID, j)
	j.Released = int64(n.released)
	n.released++
}

// ---------------------------------------------------------------- links

// Links is links.csv's recorder, fed by every link node (and bucket
// fabric) after each event.
func (c *Cluster) Links() *metrics.LinkRecorder { return c.links }

// RouterEvents is router_windows.csv's recorder, fed by the P/D router.
func (c *Cluster) RouterEvents() *metrics.RouterRecorder { return c.routerEv }

// ---------------------------------------------------------------- router

// statsPolicy is implemented by policies with per-session counters (KVC,
// KVScore); the router turns their changes into router events.
type statsPolicy interface {
	Stats(s int32) policy.SessionStats
}

// explainer is implemented by policies that can list the candidates their
// route saw (policy.KVC, policy.KVScore).
type explainer interface {
	Explain(ds *policy.Dispatch, dst []policy.Candidate) []policy.Candidate
}

// routerObs is what a P/D router reports when observed: events from its
// policy's session counters and, when log is set, one routing_log.jsonl
// line per request.
type routerObs struct {
	ev      *metrics.RouterRecorder
	stats   statsPolicy // nil: no events but rejections and Fallbacks seen in steps
	explain explainer   // nil: tries without candidates
	eps     int         // the policy's ε (0 = unknown)
	log     bool
	k       int // candidates listed per try (≤ 0: every one)
	policy  string
	prefill []string
	decode  []string
	// mu guards pending and lines (and the logs in them): a streaming
	// run's collector takes a request's line when it ends (TakeRouteLog),
	// on its own goroutine.
	mu      sync.Mutex
	pending idmap.Window[*pdLog] // by request id: the logs still being routed
	lines   idmap.Window[[]byte] // by request id: the lines of routed requests
	before  policy.SessionStats
	scratch []policy.Candidate // Explain's, reused within one Handle call
	top     []int              // try's, the indexes into cands it keeps
	ranks   []candRank         // keep's, the candidates' ranks (observe_rank.go)
	order   []int              // rank's, when it must sort
	enc     lineEncoder        // encodes the lines (routelog.go)
	// free are pdLogs whose line was encoded, reused with their Tries
	// and the tries' Candidates arrays (nothing refers to them once
	// encoded: the line is its own bytes).
	free []*pdLog
	// epsReasons are epsReason's strings, by tries.
	epsReasons []string
}

// pdLog is one routing_log.jsonl line of a P/D run (docs/OUTPUTS.md).
type pdLog struct {
	ID             int64   `json:"id"`
	Session        string  `json:"session"`
	Turn           int     `json:"turn"`
	InputTokens    int     `json:"input_tokens"`
	Policy         string  `json:"policy"`
	Tries          []pdTry `json:"tries"`
	Fallback       bool    `json:"fallback"`
	FallbackReason string  `json:"fallback_reason"`
	Mode           string  `json:"mode"`
	PWorker        string  `json:"p_worker"`
	DWorker        string  `json:"d_worker"`
}

// pdTry is one routing attempt: the candidates the route saw, the worker
// it chose and that worker's admission reply.
type pdTry struct {
	Try        int      `json:"try"`
	AtMS       float64  `json:"at_ms"`
	Candidates []pdCand `json:"candidates"`
	Omitted    int      `json:"candidates_omitted,omitempty"` // candidates beyond the top k (absent when none)
	Chosen     string   `json:"chosen"`
	Reply      string   `json:"reply"` // admitted, rejected, none (no admission), "" (no reply yet)
	Mode       string   `json:"reply_mode"`
	Reason     string   `json:"reply_reason"`
}

type pdCand struct {
	DWorker  string     `json:"d_worker"`
	Key      [4]float64 `json:"key"` // overlap + α·sticky, sticky, −inflight, −assigned
	Overlap  int        `json:"overlap"`
	Rejects  int        `json:"rejects"`
	Eligible bool       `json:"eligible"`
}

// Observe makes the P/D router report its events to ev and, when log is
// set, keep each request's routing decisions for routing_log.jsonl, with
// worker names from prefill and decode, listing per try the top k
// candidates by Algorithm 1's key (k ≤ 0: every one). name is the
// policy's name. Without log the router does no Explain work at all.
func (n *routerNode) Observe(ev *metrics.RouterRecorder, log bool, k int, name string, prefill, decode []string) {
	o := &routerObs{ev: ev, log: log, k: k, policy: name, prefill: prefill, decode: decode}
	o.stats, _ = n.pol.(statsPolicy)
	o.explain, _ = n.pol.(explainer)
	if k, ok := n.pol.(interface{ Config() policy.KVCConfig }); ok {
		o.eps = k.Config().Epsilon
	}
	n.obs = o
}

// begin is called before the policy handles a request's new job (Begin)
// or reply; it returns the candidates of a route about to happen on
// Begin.
func (o *routerObs) begin(ds *policy.Dispatch, fresh bool) []policy.Candidate {
	if o.stats != nil {
		o.before = o.stats.Stats(ds.Req.Session)
	}
	if !o.log {
		return nil
	}
	if fresh {
		r := ds.Req
		l, ok := freelist.Pop(&o.free)
		if !ok {
			l = &pdLog{}
		}
		tries := l.Tries[:0]
		if tries == nil {
			tries = []pdTry{} // "tries":[] rather than null
		}
		*l = pdLog{ID: r.ID, Session: r.SessionName, Turn: r.Turn, InputTokens: r.InputLen,
			Policy: o.policy, Tries: tries}
		o.mu.Lock()
		o.pending.Put(r.ID, l)
		o.mu.Unlock()
		if o.explain != nil {
			o.scratch = o.explain.Explain(ds, o.scratch[:0])
			return o.scratch
		}
	}
	return nil
}

// lost records, as the first try of ds's new attempt, the attempt at
// decode worker d (-1: none) that a fault lost, with its reason.
func (o *routerObs) lost(now time.Duration, ds *policy.Dispatch, d int, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	l, _ := o.pending.Get(ds.Req.ID)
	if l == nil {
		return
	}
	l.Tries = append(l.Tries, pdTry{Try: len(l.Tries), AtMS: math.Round(float64(now)/1e3) / 1e3, Candidates: []pdCand{},
		Chosen: name(o.decode, d), Reply: "lost", Reason: reason})
}

// reply records decode worker m.D's admission reply on the last try.
func (o *routerObs) reply(m AdmitReply) {
	if !o.log {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	l, _ := o.pending.Get(m.DS.Req.ID)
	if l == nil || len(l.Tries) == 0 {
		return
	}
	t := &l.Tries[len(l.Tries)-1]
	if m.Mode != policy.ModeNone {
		t.Reply, t.Mode = "admitted", m.Mode.String()
	} else {
		t.Reply, t.Reason = "rejected", m.Reason
	}
}

// step records the policy's step st for ds at now: router events from the
// session counters' change, a new try (ActAdmit) or the decision (any
// other action). cands are the candidates of a route made on Begin (nil
// otherwise; a route made after a rejection is explained here).
func (o *routerObs) step(now time.Duration, ds *policy.Dispatch, st policy.Step, cands []policy.Candidate, rejected bool) {
	if o.stats != nil {
		after := o.stats.Stats(ds.Req.Session)
		o.events(now, after.Migrations-o.before.Migrations, metrics.RouterMigration)
		o.events(now, after.Blacklists-o.before.Blacklists, metrics.RouterBlacklist)
		o.events(now, after.Fallbacks-o.before.Fallbacks, metrics.RouterFallback)
		o.events(now, after.Rejections-o.before.Rejections, metrics.RouterRejection)
		o.before = after // several steps in one handling (a fix's rejections) count once
	} else {
		if rejected {
			o.ev.Event(now, metrics.RouterRejection)
		}
		if st.Action == policy.ActPrefill && st.Mode == policy.ModeFallback {
			o.ev.Event(now, metrics.RouterFallback)
		}
	}
	if !o.log {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	l, _ := o.pending.Get(ds.Req.ID)
	if l == nil {
		return
	}
	if st.Action == policy.ActAdmit {
		if cands == nil && rejected && o.explain != nil {
			o.scratch = o.explain.Explain(ds, o.scratch[:0]) // the state the route after the rejection read
			cands = o.scratch
		}
		l.Tries = append(l.Tries, o.try(len(l.Tries), now, cands, st.D, spareCands(l.Tries)))
		return
	}
	if cands != nil { // an admission-free route (KVScore): one try, no reply
		t := o.try(len(l.Tries), now, cands, st.D, spareCands(l.Tries))
		t.Reply = "none"
		l.Tries = append(l.Tries, t)
	}
	l.Mode = st.Mode.String()
	l.DWorker = name(o.decode, st.D)
	if st.Action == policy.ActPrefill {
		l.PWorker = name(o.prefill, st.P)
	}
	if st.Mode == policy.ModeFallback {
		l.Fallback = true
		switch {
		case o.eps > 0 && ds.Tries >= o.eps:
			l.FallbackReason = o.epsReason(ds.Tries)
		default:
			l.FallbackReason = "no untried decode worker"
		}
	}
	o.pending.Delete(ds.Req.ID)
	o.lines.Put(ds.Req.ID, o.enc.encodeLog(l))
	o.free = append(o.free, l)
}

// epsReason is the fallback reason of a dispatch that ran out of its ε
// admission tries, one string per count (a run's fallbacks share few).
func (o *routerObs) epsReason(tries int) string {
	if tries < 0 || tries > 1024 {
		return strconv.Itoa(tries) + " admission tries (epsilon)"
	}
	for len(o.epsReasons) <= tries {
		o.epsReasons = append(o.epsReasons, "")
	}
	if o.epsReasons[tries] == "" {
		o.epsReasons[tries] = strconv.Itoa(tries) + " admission tries (epsilon)"
	}
	return o.epsReasons[tries]
}

func (o *routerObs) events(now time.Duration, n int, kind string) {
	for ; n > 0; n-- {
		o.ev.Event(now, kind)
	}
}

// spareCands is the Candidates array of the try that would be appended
// to tries next, left there by a reused pdLog (nil if none), emptied.
func spareCands(tries []pdTry) []pdCand {
	if n := len(tries); n < cap(tries) {
		return tries[:n+1][n].Candidates[:0]
	}
	return nil
}

// try is try i at now: the candidates kept (appended to spare, reused)
// and the chosen worker d.
func (o *routerObs) try(i int, now time.Duration, cands []policy.Candidate, d int, spare []pdCand) pdTry {
	keep := o.keep(cands, d)
	if spare == nil {
		spare = make([]pdCand, 0, len(keep))
	}
	t := pdTry{Try: i, AtMS: math.Round(float64(now)/1e3) / 1e3, Candidates: spare,
		Omitted: len(cands) - len(keep), Chosen: name(o.decode, d)}
	for _, j := range keep {
		c := &cands[j]
		t.Candidates = append(t.Candidates, pdCand{DWorker: name(o.decode, c.D), Key: c.Key(), Overlap: c.Overlap,
			Rejects: c.Rejects, Eligible: c.Eligible()})
	}
	return t
}

// keep returns the indexes into cands a try lists, ascending: every one
// when there are at most k, else the k with the largest keys (a lower
// index first on a full tie, as Route breaks it) with the chosen worker d
// in place of the k-th when it is not among them. The slice is o.top,
// valid until the next call.
func (o *routerObs) keep(cands []policy.Candidate, d int) []int {
	top := o.top[:0]
	if o.k <= 0 || len(cands) <= o.k {
		for j := range cands {
			top = append(top, j)
		}
		o.top = top
		return top
	}
	// top holds the best so far, best first: insert each candidate that
	// beats the last one kept (worst, once top is full). Most candidates
	// lose to worst on the key's first element. The comparisons are on
	// the candidates' ranks (observe_rank.go), candLess in two steps.
	r := o.rank(cands)
	var worst candRank
	for j := range cands {
		if len(top) == o.k {
			if !worst.less(r[j]) {
				continue
			}
			top[o.k-1] = j
		} else {
			top = append(top, j)
		}
		for x := len(top) - 1; x > 0 && r[top[x-1]].less(r[top[x]]); x-- {
			top[x-1], top[x] = top[x], top[x-1]
		}
		worst = r[top[len(top)-1]]
	}
	chosen := -1
	for j := range cands {
		if cands[j].D == d {
			chosen = j
			break
		}
	}
	if chosen >= 0 && !slices.Contains(top, chosen) {
		top[o.k-1] = chosen
	}
	slices.Sort(top)
	o.top = top
	return top
}

// candLess is keyLess(a.Key(), b.Key()) without building the keys (the
// same float comparisons, element by element).
func candLess(a, b *policy.Candidate) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return tailLess(a, b)
}

// tailLess is candLess between candidates of equal scores: the rest of
// the key (sticky, −inflight, −assigned).
func tailLess(a, b *policy.Candidate) bool {
	if a.Sticky != b.Sticky {
		return b.Sticky
	}
	if x, y := float64(-a.Inflight), float64(-b.Inflight); x != y {
		return x < y
	}
	x, y := float64(-a.Assigned), float64(-b.Assigned)
	return x != y && x < y
}

// keyLess reports whether key a ranks strictly below key b
// (lexicographically; equal keys rank equal, so the earlier index, seen
// first, stays ahead).
func keyLess(a, b [4]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func name(names []string, i int) string {
	if i < 0 || i >= len(names) {
		return ""
	}
	return names[i]
}

// RouteLog returns request id's routing_log.jsonl line from the P/D
// router (nil when the run logs none for it). A request still being
// routed when a partial run stopped gets its tries so far. Call it after
// the run.
func (c *Cluster) RouteLog(id int64) []byte { return c.routeLog(id, false) }

// TakeRouteLog is RouteLog for a request that ended, which the router
// then forgets (a run streaming its records takes each line as its
// request ends, so the router keeps only those of requests in flight).
// It is safe to call while the run goes on.
func (c *Cluster) TakeRouteLog(id int64) []byte { return c.routeLog(id, true) }

// routeLog is RouteLog, and TakeRouteLog when take is set.
func (c *Cluster) routeLog(id int64, take bool) []byte {
	if c.router == nil || c.router.obs == nil || !c.router.obs.log {
		return nil
	}
	o := c.router.obs
	o.mu.Lock()
	defer o.mu.Unlock()
	b, ok := o.lines.Get(id)
	if !ok {
		if l, _ := o.pending.Get(id); l != nil {
			b = marshalLog(l)
		}
	}
	if take {
		o.lines.Delete(id)
		o.pending.Delete(id)
	}
	return b
}

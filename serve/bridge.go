package serve

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/pdemu/pdemu/internal/reservoir"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/workload"
)

// Bridge is the Cluster side of a wall-clock run of the emulated cluster.
// Submit queues a request and calls the notify function (SetNotify); the
// run then Takes the queued requests and releases each at the emulated
// time it takes it, and reports each request's first token and end
// (FirstToken, Ended). The Bridge turns those reports into the Event
// stream of Cluster.Submit.
//
// Token timing: the first token and the last one are emitted when the run
// reports them (emulated TTFT and E2E are the run's own). The emulated
// decode is analytic between batch changes and reports no per-token
// events, so tokens in between are paced at the worker's recent
// inter-token time (the mean of (done − first token)/(output − 1) of its
// last completed requests, an exponentially weighted average with weight
// 0.2; before the first completion, Options.StepGuess) on the wall clock;
// if the end comes first, the remaining tokens are emitted at once, and if
// the pacing runs ahead, the last token waits for the end.
//
// FirstToken, Ended and Take never block (they are called on actor
// goroutines); each stream has its own goroutine that waits for a slow
// consumer.
type Bridge struct {
	scale float64
	guess func(worker string, r *workload.Request) time.Duration

	mu      sync.Mutex
	now     func() time.Duration
	queue   []*workload.Request
	notify  func()
	closed  bool
	nextID  int64
	streams map[int64]*stream
	steps   map[string]time.Duration
	workers map[string]WorkerState
	order   []string // worker names in first-seen order
	router  RouterState
	links   map[string]LinkState
	lnames  []string
	lag     reservoir.Sample // the lag samples
	// lateFirst, lateEnd: how late clients got first tokens and ends
	// (wall time; bounded like lag).
	lateFirst, lateEnd reservoir.Sample
	lateClient         reservoir.Sample                      // client_late_ms (Client)
	clientSink         func(id int64, c metrics.ClientTimes) // SetClientSink
	recent             [256]time.Duration
	nrecent            int
	wg                 sync.WaitGroup
	// onAbort and onAbortDone (SetAbort) tell the run that a request's
	// client went away, and that an aborted request ended.
	onAbort, onAbortDone func(id int64)
}

// BridgeOptions configure a Bridge.
type BridgeOptions struct {
	// TimeScale is the run's time scale (emulated = wall × scale) [1].
	TimeScale float64
	// StepGuess is the inter-token time assumed on a worker before any
	// request completed there [20 ms].
	StepGuess func(worker string, r *workload.Request) time.Duration
}

// NewBridge returns an open Bridge.
func NewBridge(o BridgeOptions) *Bridge {
	if o.TimeScale <= 0 {
		o.TimeScale = 1
	}
	if o.StepGuess == nil {
		o.StepGuess = func(string, *workload.Request) time.Duration { return 20 * time.Millisecond }
	}
	return &Bridge{scale: o.TimeScale, guess: o.StepGuess,
		streams: map[int64]*stream{}, steps: map[string]time.Duration{}, workers: map[string]WorkerState{},
		links: map[string]LinkState{}}
}

// Attach gives the Bridge the run's emulated clock (call before the run
// starts; until then the emulated time is taken as 0).
func (b *Bridge) Attach(now func() time.Duration) {
	b.mu.Lock()
	b.now = now
	b.mu.Unlock()
}

func (b *Bridge) emulated() time.Duration {
	b.mu.Lock()
	f := b.now
	b.mu.Unlock()
	if f == nil {
		return 0
	}
	return f()
}

// SetNotify sets the function Submit and Close call (with no lock held)
// to tell the run that requests wait to be taken or that the Bridge
// closed. It must not block.
func (b *Bridge) SetNotify(f func()) {
	b.mu.Lock()
	b.notify = f
	b.mu.Unlock()
}

func (b *Bridge) signal() {
	b.mu.Lock()
	f := b.notify
	b.mu.Unlock()
	if f != nil {
		f()
	}
}

// SetAbort sets what the Bridge calls (with its lock held: they must not
// block or call back) when a request's context is cancelled before it
// ended (abort), and when a request it called abort for ended (done).
// Unset (nil), a cancelled request runs to its end.
func (b *Bridge) SetAbort(abort, done func(id int64)) {
	b.mu.Lock()
	b.onAbort, b.onAbortDone = abort, done
	b.mu.Unlock()
}

// cancel aborts request id (its client went away), once.
func (b *Bridge) cancel(id int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.streams[id]
	if st == nil || st.abortSent || b.onAbort == nil {
		return
	}
	st.abortSent = true
	b.onAbort(id)
}

// Take returns the next submitted request if there is one (in submission
// order, with dense IDs from 0; the run sets its arrival). drained
// reports that the Bridge is closed and every request was taken.
func (b *Bridge) Take() (r *workload.Request, ok, drained bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) > 0 {
		r = b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		return r, true, false
	}
	return nil, false, b.closed
}

// Submitted is the number of requests submitted so far.
func (b *Bridge) Submitted() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nextID
}

// Close stops accepting requests; Take reports drained once the requests
// already submitted were taken. Streams in flight run to their end.
func (b *Bridge) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.signal()
}

// Abort closes the Bridge and fails every request in flight with reason
// (the run behind it stopped: nothing will report them).
func (b *Bridge) Abort(reason string) {
	b.Close()
	now := b.emulated()
	b.mu.Lock()
	streams := b.streams
	b.streams = map[int64]*stream{}
	b.queue = nil
	b.mu.Unlock()
	for _, st := range streams {
		st.mu.Lock()
		if !st.hasEnd {
			arr := st.arrival
			if !st.hasFirst {
				arr = now
			}
			st.end, st.hasEnd = End{ID: st.req.ID, Worker: st.worker, Arrival: arr, Done: now, Failed: reason, Now: now}, true
		}
		st.mu.Unlock()
		st.poke()
	}
}

// Wait returns when every stream has emitted its last event.
func (b *Bridge) Wait() { b.wg.Wait() }

// ErrClosed is returned by Submit once the Bridge is closed.
var ErrClosed = errors.New("the emulated cluster is shutting down")

// Submit implements Cluster. It renumbers r.ID to the run's dense
// sequence. Cancelling ctx before the request ended aborts it (SetAbort):
// it leaves the cluster and its events end with EvFailed, Reason
// gpu.ReasonAborted.
func (b *Bridge) Submit(ctx context.Context, r *workload.Request) (<-chan Event, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	r.ID = b.nextID
	b.nextID++
	st := &stream{b: b, req: r, out: make(chan Event, 64), notify: make(chan struct{}, 1)}
	if ctx != nil && ctx.Done() != nil {
		// Set before the request is queued: the run may take it and end
		// it (Ended reads stopWatch under mu) before Submit returns. The
		// watch calls cancel on its own goroutine, which waits for mu.
		id := r.ID
		st.stopWatch = context.AfterFunc(ctx, func() { b.cancel(id) })
	}
	b.streams[r.ID] = st
	b.queue = append(b.queue, r)
	b.wg.Add(1)
	b.mu.Unlock()
	b.signal()
	go st.run()
	return st.out, nil
}

// FirstToken reports that request id produced its first token on worker
// at emulated time at; now is the emulated time of the report (now − at is
// a lag sample). It never blocks.
func (b *Bridge) FirstToken(id int64, worker string, arrival, at, now time.Duration) {
	b.mu.Lock()
	st := b.streams[id]
	b.sample(now - at)
	step, ok := b.steps[worker]
	b.mu.Unlock()
	if st == nil {
		return
	}
	if !ok {
		step = b.guess(worker, st.req)
	}
	st.mu.Lock()
	if !st.hasFirst {
		st.hasFirst, st.worker, st.arrival, st.firstAt, st.step = true, worker, arrival, at, step
	}
	st.mu.Unlock()
	st.poke()
}

// End is how a request ended.
type End struct {
	ID                    int64
	Worker, Prefill, Mode string
	CachedTokens          int
	Arrival, FirstToken   time.Duration // FirstToken 0: none
	Done                  time.Duration
	Failed                string // non-empty: the request failed
	// Fault: a fault (crash, cut link) hit the request; a failure then
	// is the cluster's, worth retrying (503 with Retry-After).
	Fault bool
	// Queue and PrefillTime split the TTFT as vLLM's request metrics do:
	// waiting until its prefill started, then until its first token.
	Queue, PrefillTime time.Duration
	Now                time.Duration
}

// Ended reports that a request ended (now − Done is a lag sample). It
// never blocks.
func (b *Bridge) Ended(e End) {
	b.mu.Lock()
	st := b.streams[e.ID]
	delete(b.streams, e.ID)
	if st != nil && st.abortSent && b.onAbortDone != nil {
		b.onAbortDone(e.ID)
	}
	if st != nil && st.stopWatch != nil {
		st.stopWatch()
	}
	b.sample(e.Now - e.Done)
	if e.Failed == "" && st != nil && st.req.OutputLen > 1 && e.FirstToken > 0 && e.Done > e.FirstToken {
		obs := (e.Done - e.FirstToken) / time.Duration(st.req.OutputLen-1)
		if old, ok := b.steps[e.Worker]; ok {
			b.steps[e.Worker] = old + (obs-old)/5
		} else {
			b.steps[e.Worker] = obs
		}
	}
	b.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	st.end, st.hasEnd = e, true
	st.mu.Unlock()
	st.poke()
}

func (b *Bridge) sample(lag time.Duration) {
	lag = max(lag, 0)
	b.lag.Add(lag)
	b.recent[b.nrecent%len(b.recent)] = lag
	b.nrecent++
}

// SetWorker publishes a worker's state (for Snapshot).
func (b *Bridge) SetWorker(w WorkerState) {
	b.mu.Lock()
	upsert(b.workers, &b.order, w.Name, w)
	b.mu.Unlock()
}

// upsert sets m[name] = v, appending name to order when it is new (the
// snapshot lists workers and links in the order they first reported).
func upsert[T any](m map[string]T, order *[]string, name string, v T) {
	if _, ok := m[name]; !ok {
		*order = append(*order, name)
	}
	m[name] = v
}

// SetRouter publishes the router's counters.
func (b *Bridge) SetRouter(r RouterState) {
	b.mu.Lock()
	b.router = r
	b.mu.Unlock()
}

// SetLink publishes a link's state.
func (b *Bridge) SetLink(l LinkState) {
	b.mu.Lock()
	upsert(b.links, &b.lnames, l.Name, l)
	b.mu.Unlock()
}

// Snapshot implements Cluster. Lag is the largest of the last 256 lag
// samples.
func (b *Bridge) Snapshot() Snapshot {
	now := b.emulated()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Snapshot{Emulated: now, Router: b.router}
	for i := range min(b.nrecent, len(b.recent)) {
		s.Lag = max(s.Lag, b.recent[i])
	}
	for _, n := range b.order {
		s.Workers = append(s.Workers, b.workers[n])
	}
	for _, n := range b.lnames {
		s.Links = append(s.Links, b.links[n])
	}
	return s
}

// LagStats summarises every lag sample so far (emulated time).
type LagStats struct {
	Samples       int
	P50, P99, Max time.Duration
}

// Late is how late, in wall time, an event of emulated time at is
// reported now: (emulated now − at) / time scale, at least 0.
func (b *Bridge) Late(at time.Duration) time.Duration {
	return max(0, time.Duration(float64(b.emulated()-at)/b.scale))
}

// Served records that a client got request events late by first (its
// first token) and end (wall time); ServedLateness summarises them.
func (b *Bridge) Served(first, end time.Duration) {
	b.mu.Lock()
	b.lateFirst.Add(first)
	b.lateEnd.Add(end)
	b.mu.Unlock()
}

// ServedLateness summarises the lateness clients saw (nil when no
// request completed nor reached its client); bound is the verdict's
// threshold: Late when the first tokens' report lateness p99 or the
// client lateness p99 (client_late_ms) passed it.
func (b *Bridge) ServedLateness(bound time.Duration) *metrics.ServedLateness {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lateFirst.N() == 0 && b.lateClient.N() == 0 {
		return nil
	}
	q := func(r *reservoir.Sample) metrics.Lateness {
		ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
		qs, mx, n := r.Quantiles(0.5, 0.99)
		return metrics.Lateness{P50: ms(qs[0]), P99: ms(qs[1]), Max: ms(mx), Samples: n}
	}
	out := &metrics.ServedLateness{FirstToken: q(&b.lateFirst), End: q(&b.lateEnd), BoundMS: float64(bound.Microseconds()) / 1e3}
	out.Client = b.clientLateness()
	out.Late = out.FirstToken.P99 > out.BoundMS || out.Client != nil && out.Client.P99 > out.BoundMS
	return out
}

// Lag returns the lag statistics.
func (b *Bridge) Lag() LagStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lag.N() == 0 {
		return LagStats{}
	}
	qs, mx, n := b.lag.Quantiles(0.5, 0.99)
	return LagStats{Samples: n, P50: qs[0], P99: qs[1], Max: mx}
}

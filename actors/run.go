package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// Options adjust a run; zero values keep the scenario's settings.
type Options struct {
	Logger hclog.Logger // default: hclog at Warn to stderr
	// Source replaces the scenario's workload (tests, benchmarks, --trace).
	Source workload.Source
	// WallTimeout bounds a wall-clock run in real time (default 30 min;
	// negative: no bound, for a server that runs until ctx is done).
	WallTimeout time.Duration
	// Horizon bounds a virtual run in emulated time (default 0 = none).
	Horizon time.Duration
	// Progress, when set, is called (on an actor's goroutine: keep it
	// short and safe for concurrent use) each time a request ends.
	Progress func(Progress)
	// FreshSystem runs on a new actor system instead of a pooled one
	// (metamorphic tests compare the two).
	FreshSystem bool
	// Wrap, when set, is called once the cluster is built and its series
	// bounded, before any actor is spawned, with the run's emulated clock:
	// it may replace nodes of cl.Nodes by nodes that wrap them (a server's
	// feeders and watchers, live metrics) and read cl; an error fails the
	// run before it starts. Wrapped nodes run on their actor's goroutine,
	// like the nodes they wrap.
	Wrap func(cl *cluster.Cluster, now func() time.Duration) error
	// Started, when set, is called once the actors are spawned and the
	// driver is started, with the run's Injector: the clock-safe way for
	// other goroutines to send the nodes messages (wall clock only: Run
	// refuses it on the virtual clock, whose steps would not wait for them).
	Started func(*Injector)
	// Records, when set, receives each request's record as the request
	// ends (in end order, from the collector's goroutine) and the run
	// keeps none: Result.Records is then nil, the summary is tallied as
	// the records go (metrics.Tally) and Result.Arrivals counts them for
	// router_windows.csv. A run's memory is then bounded by its requests
	// in flight, not by its length (output.Stream is pdemu run's sink).
	Records RecordSink
	// Bounded, with Records, bounds the summary's memory too (a server's:
	// metrics.Tally.Bound): past metrics.BoundExact completed requests its
	// quantiles are sketch estimates (summary.json estimates says so).
	Bounded bool
}

// RecordSink receives the records of a streaming run (Options.Records).
// An error fails the run.
type RecordSink interface {
	Record(metrics.Record) error
}

// Progress is a run's progress as the collector sees it.
type Progress struct {
	Ended    int           // requests ended so far (completed or failed)
	Emulated time.Duration // emulated time now
}

// Result is everything a run produced.
type Result struct {
	Summary        metrics.Summary
	Records        []metrics.Record // by request id; nil when streamed (Options.Records)
	Series         []*metrics.Series
	SampleInterval time.Duration
	End            time.Duration // emulated end of the run
	Wall           time.Duration // real time the run took
	// Sessions has one row per session for KVC-Router runs (sessions.csv).
	Sessions []metrics.SessionRow
	// Evictions are the decode workers' residency losses (evictions.csv).
	Evictions []metrics.EvictionRow
	// Unfinished are the requests still in the cluster when a partial run
	// stopped (State "unfinished"; written to per_request.csv).
	Unfinished []metrics.Record
	// Links and RouterEvents feed links.csv and router_windows.csv (nil:
	// header only / router columns 0).
	Links        *metrics.LinkRecorder
	RouterEvents *metrics.RouterRecorder
	// Faults feed faults.csv (nil: header only); Restarts are the
	// supervisor's restarts per actor name (injected crashes).
	Faults   []metrics.FaultRecord
	Restarts map[string]int
	// Arrivals counts the records of a streaming run (Options.Records) per
	// second of arrival, unfinished ones not included (nil otherwise: the
	// Records are there).
	Arrivals *metrics.Arrivals
}

// runState is shared by the actors of one run to report its end.
type runState struct {
	mu       sync.Mutex
	err      error
	panics   atomic.Int64
	done     chan struct{}
	doneOnce sync.Once
	abort    func()
	progress func(Progress)
}

// report handles a node's message to cluster.RunAddr.
func (r *runState) report(msg any) {
	switch m := msg.(type) {
	case cluster.Failed:
		r.fail(m.Err)
	case cluster.Done:
		r.finished()
	case *cluster.Progress:
		if r.progress != nil {
			r.progress(Progress{Ended: m.Ended, Emulated: m.At})
		}
	}
}

func (r *runState) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.abort()
	r.finished()
}

func (r *runState) panicked(err error) {
	r.panics.Add(1)
	r.fail(err)
}

func (r *runState) finished() { r.doneOnce.Do(func() { close(r.done) }) }

func (r *runState) error() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Run emulates spec and returns its results. The error is non-nil when the
// run could not complete correctly (a panic, a lost request, a bad trace);
// a Result may still come back with what was collected.
func Run(ctx context.Context, spec *topology.Spec, opts Options) (*Result, error) {
	log := opts.Logger
	if log == nil {
		log = hclog.New(&hclog.LoggerOptions{Name: "pdemu", Level: hclog.Warn})
	}
	src := opts.Source
	if src == nil {
		var err error
		if src, err = Source(spec, false); err != nil {
			return nil, err
		}
		if c, ok := src.(io.Closer); ok {
			defer c.Close()
		}
	}
	if opts.Started != nil && spec.Workload.Clock != topology.ClockWall {
		return nil, fmt.Errorf("injecting messages from outside needs the wall clock (this run's clock is virtual)")
	}
	// A wall run's --wall-timeout covers building the cluster too (a
	// 256P768D full mesh builds 196,608 links before its clock starts).
	var deadline time.Time // zero: none
	if d := wallTimeout(opts.WallTimeout); spec.Workload.Clock == topology.ClockWall && d > 0 {
		deadline = time.Now().Add(d)
	}
	cl, err := buildBy(spec, src, deadline, wallTimeout(opts.WallTimeout))
	if err != nil {
		return nil, err
	}
	boundSeries(cl.Series, spec.Workload.SampleInterval)
	if opts.Records != nil {
		cl.Collector().Stream(opts.Records.Record, cl.TakeRouteLog, cl.FaultTimes())
		if opts.Bounded {
			slo := spec.SLO
			cl.Collector().Tally().Bound(metrics.SLO{TTFT: slo.TTFT, TPOT: slo.TPOT, E2E: slo.E2E, Attainment: slo.Attainment})
		}
	}
	ps := borrowSystem(log, opts.FreshSystem)
	rs := &runState{done: make(chan struct{}), progress: opts.Progress}
	clk := newClock(ps.sys, spec.Workload, rs)
	if v, ok := clk.(*VirtualClock); ok {
		v.adopt(&ps.queue) // the buffers of the system's previous virtual run
	}
	if opts.Wrap != nil {
		if err := opts.Wrap(cl, clk.Now); err != nil {
			ps.release()
			return nil, err
		}
	}
	var deadLetters atomic.Int64
	sub := watchDeadLetters(ps.sys, clk, log, &deadLetters)
	pids, shells, slots := occupy(ps, ps.sys, cl, clk, rs, isVirtual(clk))

	start := time.Now()
	runErr := drive(ctx, clk, pids, cl.Driver, rs, opts, deadline)
	end := clk.Now()
	// The sample interval, widened now that the horizon is known so that
	// instances.csv stays within topology.MaxSampleRows (output.Write
	// bounds it further, to metrics.MaxInstanceRows).
	interval := spec.Workload.SampleInterval
	if interval > 0 { // 0: the writer's default (1 s)
		interval = topology.SampleInterval(interval, len(cl.Series), end)
	}
	res := &Result{Series: cl.Series, SampleInterval: interval, End: end, Wall: time.Since(start)}

	// Wait until every actor handled what it was sent (a barrier: the
	// nodes are read afterwards; the virtual clock only returns once they
	// did), then stop the tree explicitly.
	stopped := true
	for i := 0; i < len(pids) && !isVirtual(clk); i++ {
		_, err := ps.sys.Root.RequestFuture(pids[i], &queryMsg{}, 10*time.Second).Result()
		stopped = stopped && err == nil
	}
	stop := slots
	if isVirtual(clk) && rs.panics.Load() == 0 && !cl.HasFaults() {
		stop = ps.park(slots) // the next run on ps occupies them (slots.go)
	}
	for _, a := range stop {
		stopped = stopped && ps.sys.Root.StopFuture(a.pid).Wait() == nil
	}
	ps.sys.EventStream.Unsubscribe(sub)
	if v, ok := clk.(*VirtualClock); ok {
		v.handBack(&ps.queue) // before the system goes back to the pool
	}
	if stopped && rs.panics.Load() == 0 {
		ps.release() // every actor of this run is gone: the system is idle
	} else {
		ps.sys.Shutdown()
	}
	summarize(res, spec, cl, src, clk, deadLetters.Load(), rs.panics.Load())
	res.Restarts = restartCounts(shells)
	if res.Summary.Faults != nil {
		res.Summary.Faults.Restarts = res.Restarts
	}
	by := stoppedBy(ctx, runErr)
	if by == "" && errors.As(rs.error(), new(*workload.RecordError)) {
		by = StoppedByBadRecord // the trace ended early: the rest was never read
	}
	if by != "" {
		markPartial(res, cl, by)
		err := checkPartial(res, cl, by, runErr, rs.error(), deadLetters.Load())
		markFailed(res, cl, err)
		return res, err
	}
	err = check(res, cl, runErr, rs.error(), deadLetters.Load())
	markFailed(res, cl, err)
	return res, err
}

// newClock returns the run's clock; a run failure aborts it.
func newClock(sys *actor.ActorSystem, wl topology.Workload, rs *runState) Clock {
	if wl.Clock == topology.ClockWall {
		scale := wl.TimeScale
		if scale <= 0 {
			scale = 1
		}
		c := NewWallClock(sys, scale)
		rs.abort = c.Stop
		return c
	}
	c := NewVirtualClock(sys)
	rs.abort = c.Abort
	return c
}

func isVirtual(clk Clock) bool { _, ok := clk.(*VirtualClock); return ok }

// wallTimeout is Options.WallTimeout, or its default for 0 (negative:
// none).
func wallTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return 30 * time.Minute
	}
	return d
}

// buildBy builds the cluster, giving up at deadline (zero: never) with
// the --wall-timeout error; the abandoned build ends on its own.
func buildBy(spec *topology.Spec, src workload.Source, deadline time.Time, timeout time.Duration) (*cluster.Cluster, error) {
	if deadline.IsZero() {
		return cluster.Build(spec, src)
	}
	type built struct {
		cl  *cluster.Cluster
		err error
	}
	ch := make(chan built, 1)
	go func() {
		cl, err := cluster.Build(spec, src)
		ch <- built{cl, err}
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case b := <-ch:
		return b.cl, b.err
	case <-t.C:
		return nil, &errWallTimeout{fmt.Errorf("the cluster did not build within %v (--wall-timeout covers the build)", timeout)}
	}
}

// drive starts the driver and runs the clock until the run ends (a wall
// run until deadline at the latest; zero: no deadline).
func drive(ctx context.Context, clk Clock, pids []*actor.PID, driver cluster.Addr, rs *runState, opts Options, deadline time.Time) error {
	clk.Send(0, 0, pids[driver], cluster.Start{}, 0)
	if v, ok := clk.(*VirtualClock); ok {
		return v.Run(ctx, opts.Horizon)
	}
	w := clk.(*WallClock)
	defer w.Stop()
	if opts.Started != nil {
		in := &Injector{clk: w, pids: pids}
		defer in.stop()
		opts.Started(in)
	}
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-rs.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout:
		return &errWallTimeout{fmt.Errorf("wall-clock run did not finish within %v (--wall-timeout)", wallTimeout(opts.WallTimeout))}
	}
}

// Injector sends nodes of a running wall-clock run messages from outside
// the run (Options.Started): a server's goroutines hand it requests this
// way. Each message is delivered through the run's clock, at the emulated
// time it is handled, like a message between nodes (so it is counted in
// the clock's bookkeeping and ordered with the nodes' own). It is safe
// for concurrent use; once the run stopped, Inject drops the message and
// returns false.
type Injector struct {
	clk     *WallClock
	pids    []*actor.PID
	mu      sync.RWMutex
	stopped bool
}

// Inject sends msg to the node at address to, now.
func (in *Injector) Inject(to cluster.Addr, msg any) bool {
	in.mu.RLock()
	defer in.mu.RUnlock()
	if in.stopped || to < 0 || int(to) >= len(in.pids) {
		return false
	}
	in.clk.Send(0, 0, in.pids[to], msg, 0)
	return true
}

// Now is the run's emulated time.
func (in *Injector) Now() time.Duration { return in.clk.Now() }

func (in *Injector) stop() {
	in.mu.Lock()
	in.stopped = true
	in.mu.Unlock()
}

// watchDeadLetters counts dead letters and logs them. A clock-delivered
// message that reaches no actor is reported to the clock as handled, so a
// virtual run fails (Run reports dead letters as an error) instead of
// waiting for it forever.
func watchDeadLetters(sys *actor.ActorSystem, clk Clock, log hclog.Logger, n *atomic.Int64) *eventstream.Subscription {
	return sys.EventStream.Subscribe(func(m any) {
		dl, ok := m.(*actor.DeadLetterEvent)
		if !ok {
			return
		}
		n.Add(1)
		if fromClock(dl.Message) {
			clk.handled()
		}
		log.Warn("dead letter", "pid", dl.PID.String(), "message", fmt.Sprintf("%T", dl.Message))
	})
}

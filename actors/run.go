package actors

import (
	"context"
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
	// WallTimeout bounds a wall-clock run in real time (default 30 min).
	WallTimeout time.Duration
	// Horizon bounds a virtual run in emulated time (default 0 = none).
	Horizon time.Duration
	// Progress, when set, is called (on an actor's goroutine: keep it
	// short and safe for concurrent use) each time a request ends.
	Progress func(Progress)
	// FreshSystem runs on a new actor system instead of a pooled one
	// (metamorphic tests compare the two).
	FreshSystem bool
	// Metrics, when set, are fed live during the run (wall clock only:
	// Run refuses them on the virtual clock). See RunMetrics.
	Metrics *RunMetrics
	// Records, when set, receives each request's record as the request
	// ends (in end order, from the collector's goroutine) and the run
	// keeps none: Result.Records is then nil, the summary is tallied as
	// the records go (metrics.Tally) and Result.Arrivals counts them for
	// router_windows.csv. A run's memory is then bounded by its requests
	// in flight, not by its length (output.Stream is pdemu run's sink).
	Records RecordSink
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
	if opts.Metrics != nil && spec.Workload.Clock != topology.ClockWall {
		return nil, fmt.Errorf("live metrics need the wall clock (this run's clock is virtual)")
	}
	// A wall run's --wall-timeout covers building the cluster too (a
	// 256P768D full mesh builds 196,608 links before its clock starts).
	var deadline time.Time
	if spec.Workload.Clock == topology.ClockWall {
		deadline = time.Now().Add(wallTimeout(opts.WallTimeout))
	}
	cl, err := buildBy(spec, src, deadline, wallTimeout(opts.WallTimeout))
	if err != nil {
		return nil, err
	}
	boundSeries(cl.Series, spec.Workload.SampleInterval)
	if opts.Records != nil {
		cl.Collector().Stream(opts.Records.Record, cl.TakeRouteLog, cl.HasFaults())
	}
	ps := borrowSystem(log, opts.FreshSystem)
	rs := &runState{done: make(chan struct{}), progress: opts.Progress}
	clk := newClock(ps.sys, spec.Workload, rs)
	if opts.Metrics != nil {
		opts.Metrics.attach(spec, cl, clk.Now)
	}
	var deadLetters atomic.Int64
	sub := watchDeadLetters(ps.sys, clk, log, &deadLetters)
	pids, shells := spawnShells(ps.sys, cl, clk, rs, isVirtual(clk))

	start := time.Now()
	runErr := drive(ctx, clk, pids[cl.Driver], rs, opts, deadline)
	end := clk.Now()
	if opts.Metrics != nil {
		opts.Metrics.finish(end)
	}
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
	for _, pid := range pids {
		stopped = stopped && ps.sys.Root.StopFuture(pid).Wait() == nil
	}
	ps.sys.EventStream.Unsubscribe(sub)
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
	if by := stoppedBy(ctx, runErr); by != "" {
		markPartial(res, cl, by)
		return res, checkPartial(res, cl, by, runErr, rs.error(), deadLetters.Load())
	}
	return res, check(res, cl, runErr, rs.error(), deadLetters.Load())
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

// wallTimeout is Options.WallTimeout or its default.
func wallTimeout(d time.Duration) time.Duration {
	if d <= 0 {
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
// run until deadline at the latest).
func drive(ctx context.Context, clk Clock, driver *actor.PID, rs *runState, opts Options, deadline time.Time) error {
	clk.Send(0, 0, driver, cluster.Start{}, 0)
	if v, ok := clk.(*VirtualClock); ok {
		return v.Run(ctx, opts.Horizon)
	}
	w := clk.(*WallClock)
	defer w.Stop()
	timeout := wallTimeout(opts.WallTimeout)
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-rs.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return &errWallTimeout{fmt.Errorf("wall-clock run did not finish within %v (--wall-timeout)", timeout)}
	}
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

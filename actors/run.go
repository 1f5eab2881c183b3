package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
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
}

// Progress is a run's progress as the collector sees it.
type Progress struct {
	Ended    int           // requests ended so far (completed or failed)
	Emulated time.Duration // emulated time now
}

// Result is everything a run produced.
type Result struct {
	Summary        metrics.Summary
	Records        []metrics.Record
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
}

// runState is shared by the actors of one run to report its end.
type runState struct {
	mu       sync.Mutex
	err      error
	panics   atomic.Int64
	done     chan struct{}
	doneOnce sync.Once
	abort    func()
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
	var b *built
	var pb *poolBuilt
	var err error
	if len(spec.Buckets) > 0 {
		pb, err = buildPool(spec)
	} else {
		b, err = build(spec)
	}
	if err != nil {
		return nil, err
	}
	if b != nil {
		if err := b.checkLinks(spec); err != nil {
			return nil, err
		}
	}
	src := opts.Source
	if src == nil {
		if src, err = Source(spec, false); err != nil {
			return nil, err
		}
		if c, ok := src.(io.Closer); ok {
			defer c.Close()
		}
	}
	wl := spec.Workload

	ps := borrowSystem(log, opts.FreshSystem)
	sys := ps.sys
	rs := &runState{done: make(chan struct{})}
	var clk Clock
	var vclk *VirtualClock
	var wclk *WallClock
	switch wl.Clock {
	case topology.ClockWall:
		scale := wl.TimeScale
		if scale <= 0 {
			scale = 1
		}
		wclk = NewWallClock(sys, scale)
		clk = wclk
		rs.abort = wclk.Stop
	default:
		vclk = NewVirtualClock(sys)
		clk = vclk
		rs.abort = vclk.Abort
	}
	var deadLetters atomic.Int64
	sub := watchDeadLetters(sys, clk, log, &deadLetters)

	// Build the actors (ids fix the deterministic delivery order).
	var nextID int32
	mk := func(name string) node {
		nextID++
		return node{id: nextID, name: name, clk: clk}
	}
	drv := &driverActor{node: mk("driver"), drv: workload.NewDriver(src, wl.Loop != topology.LoopOpen), run: rs}
	coll := &collectorActor{node: mk("collector"), run: rs, progress: opts.Progress}

	var pids []*actor.PID
	var propsOpts []actor.PropsOption
	if vclk != nil {
		// In virtual time all messages of a step are delivered by the clock's
		// goroutine; running each mailbox on that goroutine (instead of a
		// fresh goroutine per mailbox activation) keeps delivery order and
		// saves the scheduling and stack growth, which dominated profiles.
		propsOpts = append(propsOpts, actor.WithDispatcher(actor.NewSynchronizedDispatcher(1024)))
	}
	spawn := func(n *node, h handler) *actor.PID {
		sh := &shell{n: n, h: h, run: rs}
		pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return sh }, propsOpts...))
		n.self = pid
		pids = append(pids, pid)
		return pid
	}
	drvPID := spawn(&drv.node, drv)
	colPID := spawn(&coll.node, coll)
	var cl *spawned
	if pb != nil {
		coll.col = metrics.NewCollector(nil, names(spec.Fused))
		cl = spawnPool(spec, pb, mk, spawn, colPID)
	} else {
		coll.col = metrics.NewCollector(names(spec.Prefill), names(spec.Decode))
		cl = spawnPD(spec, b, mk, spawn, colPID)
	}
	// Wire everything before the first message.
	drv.router, drv.collector = cl.router, colPID
	coll.driver = drvPID
	series := cl.series

	start := time.Now()
	var runErr error
	if vclk != nil {
		vclk.Send(0, 0, drvPID, startMsg{}, 0)
		runErr = vclk.Run(ctx, opts.Horizon)
	} else {
		timeout := opts.WallTimeout
		if timeout <= 0 {
			timeout = 30 * time.Minute
		}
		wclk.Send(0, 0, drvPID, startMsg{}, 0)
		select {
		case <-rs.done:
		case <-ctx.Done():
			runErr = ctx.Err()
		case <-time.After(timeout):
			runErr = fmt.Errorf("wall-clock run did not finish within %v", timeout)
		}
		wclk.Stop()
	}
	wall := time.Since(start)
	end := clk.Now()

	// Read the results through the actors, then stop the tree explicitly.
	ask := func(pid *actor.PID) any {
		v, err := sys.Root.RequestFuture(pid, &queryMsg{}, 10*time.Second).Result()
		if err != nil {
			return nil
		}
		return v
	}
	collected, _ := ask(colPID).(*metrics.Collector)
	res := &Result{Series: series, SampleInterval: wl.SampleInterval, End: end, Wall: wall}
	workers, sessStats := cl.report(ask)
	stopped := true
	for _, pid := range pids {
		if err := sys.Root.StopFuture(pid).Wait(); err != nil {
			stopped = false
		}
	}
	sys.EventStream.Unsubscribe(sub)
	if stopped && rs.panics.Load() == 0 {
		ps.release() // every actor of this run is gone: the system is idle
	} else {
		sys.Shutdown()
	}

	if collected == nil {
		return nil, errors.Join(runErr, rs.error(), errors.New("could not read the collector"))
	}
	res.Records = collected.Records()
	sum := metrics.Summarize(res.Records)
	sum.Scenario = spec.Name
	sum.Policy = spec.Router.Policy
	sum.Seed = wl.Seed
	sum.Clock = metrics.Clock{Mode: wl.Clock, TimeScale: wl.TimeScale}
	if sum.Clock.Mode == "" {
		sum.Clock.Mode = topology.ClockVirtual
	}
	if wclk != nil {
		wclk.Judge(&sum.Clock, sum.TTFT.P50) // lateness in real and emulated time, saturation, verdict
	}
	sum.Runtime = metrics.Runtime{DeadLetters: deadLetters.Load(), Panics: rs.panics.Load()}
	if vclk != nil {
		sum.Runtime.Steps, sum.Runtime.Messages = vclk.Steps(), vclk.Messages()
	}
	metrics.AttachWorkers(&sum, workers, res.Records) // request counts and shares (fused workers too)
	sum.PerBucket = metrics.SummarizeBuckets(res.Records)
	if sessStats != nil {
		res.Sessions, sum.Router = sessionRows(res.Records, sessStats)
	}
	if sk, ok := src.(workload.Skipper); ok {
		sum.Requests.SkippedBad = sk.Skipped()
	}
	res.Summary = sum

	// Nothing is lost: every request read from the source ended exactly once.
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
	}
	if err := rs.error(); err != nil {
		errs = append(errs, err)
	}
	if n := deadLetters.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("%d dead letters: messages reached actors that were gone (see the log)", n))
	}
	if read := drv.drv.Read(); len(errs) == 0 && read != sum.Requests.Total {
		lost := []int64{}
		for id := int64(0); id < int64(read) && len(lost) < 10; id++ {
			if !collected.Seen(id) {
				lost = append(lost, id)
			}
		}
		errs = append(errs, fmt.Errorf("%d requests were released but %d ended (first missing ids: %v)", read, sum.Requests.Total, lost))
	}
	if sum.Requests.Total != sum.Requests.Completed+sum.Requests.Failed {
		errs = append(errs, fmt.Errorf("requests.total %d != completed %d + failed %d", sum.Requests.Total, sum.Requests.Completed, sum.Requests.Failed))
	}
	return res, errors.Join(errs...)
}

// sessionRows joins the router's per-session counters with the records,
// in session index order (deterministic output).
func sessionRows(recs []metrics.Record, st map[int32]policy.SessionStats) ([]metrics.SessionRow, *metrics.RouterTotals) {
	type agg struct {
		name             string
		requests, direct int
	}
	by := map[int32]*agg{}
	for _, r := range recs {
		a := by[r.SessionIdx]
		if a == nil {
			a = &agg{name: r.Session}
			by[r.SessionIdx] = a
		}
		a.requests++
		if !r.Failed && r.Mode == policy.ModeDirect.String() {
			a.direct++
		}
	}
	idx := make([]int32, 0, len(by))
	for s := range by {
		idx = append(idx, s)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	rows := make([]metrics.SessionRow, 0, len(idx))
	tot := &metrics.RouterTotals{}
	for _, s := range idx {
		a, c := by[s], st[s]
		rows = append(rows, metrics.SessionRow{Session: a.name, Requests: a.requests, Direct: a.direct,
			Migrations: c.Migrations, Blacklists: c.Blacklists, Fallbacks: c.Fallbacks, Rejections: c.Rejections})
		tot.Migrations += c.Migrations
		tot.MaxSessionMigrations = max(tot.MaxSessionMigrations, c.Migrations)
		tot.Blacklists += c.Blacklists
		tot.Fallbacks += c.Fallbacks
		tot.Rejections += c.Rejections
	}
	return rows, tot
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
		inner := dl.Message
		if env, ok := inner.(*envelope); ok {
			inner = env.msg
			clk.handled()
		}
		log.Warn("dead letter", "pid", dl.PID.String(), "message", fmt.Sprintf("%T", inner))
	})
}

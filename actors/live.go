package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"io"
	"sync/atomic"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/serve"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	// HTTP configures the server (listen address, limits, model name).
	HTTP serve.Options
	// TimeScale overrides the scenario's time scale (0: the scenario's, or 1).
	TimeScale float64
	Logger    hclog.Logger
	// FreshSystem runs on a new actor system.
	FreshSystem bool
}

// ServeResult is a served run's outcome.
type ServeResult struct {
	*Result
	// Lag is how late the emulation reported first tokens and ends, in
	// emulated time (report time − the emulated time of the event).
	Lag serve.LagStats
	// Partial: the run was cut (the drain did not finish or the run failed)
	// and some requests never ended.
	Partial bool
}

// Serve runs spec's cluster on the wall clock behind an OpenAI-compatible
// HTTP server (package serve) instead of the scenario's workload block,
// until ctx is done; then it drains (new requests get 503, in-flight
// streams end normally), stops the run once every request ended, and
// returns the run's results like Run does.
//
// The run is an open-loop wall-clock run whose workload.Source is a
// serve.Bridge: every HTTP request becomes a request released at the
// emulated time it arrives. Nodes are watched, not changed: the decode
// and bucket nodes' jobs report their first token as soon as it is set,
// the collector reports each ended job, the workers' series, the router's
// counters and the links' bytes feed /metrics.
func Serve(ctx context.Context, spec *topology.Spec, o ServeOptions) (*ServeResult, error) {
	s := *spec
	s.Workload.Clock = topology.ClockWall
	s.Workload.Loop = topology.LoopOpen
	if o.TimeScale > 0 {
		s.Workload.TimeScale = o.TimeScale
	}
	if s.Workload.TimeScale <= 0 {
		s.Workload.TimeScale = 1
	}
	if o.HTTP.Logger == nil {
		o.HTTP.Logger = o.Logger
	}
	if o.HTTP.Model == "" {
		// The scenario's model when every worker serves the same one.
		o.HTTP.Model = commonModel(&s)
	}
	if err := serve.CheckListen(listenOr(o.HTTP.Listen), o.HTTP.AllowRemote); err != nil {
		return nil, err
	}
	workers := map[string]topology.Worker{}
	for _, ws := range [][]topology.Worker{s.Decode, s.Prefill, s.Fused} {
		for _, w := range ws {
			workers[w.Name] = w
		}
	}
	br := serve.NewBridge(serve.BridgeOptions{TimeScale: s.Workload.TimeScale,
		StepGuess: func(worker string, r *workload.Request) time.Duration {
			if p, err := PerfFor(workers[worker]); err == nil {
				return p.DecodeStepTime(1, int64(r.InputLen))
			}
			return 20 * time.Millisecond
		}})

	runDone := make(chan struct{})
	var res *Result
	var runErr error
	// The run outlives ctx: it ends once the drain is over (or the drain
	// times out and cancelRun cuts it).
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	ready := make(chan struct{})
	go func() {
		defer close(runDone)
		res, runErr = runLive(runCtx, &s, br, o, ready)
	}()
	// Listen only once the cluster runs (a build error returns at once).
	select {
	case <-ready:
	case <-runDone:
		return &ServeResult{Result: res, Partial: true}, runErr
	}

	srvCtx, stopSrv := context.WithCancel(ctx)
	defer stopSrv()
	go func() {
		select {
		case <-runDone: // the run failed while serving
			stopSrv()
		case <-srvCtx.Done():
		}
	}()
	srvErr := serve.Run(srvCtx, o.HTTP, br)
	br.Close()
	drain := o.HTTP.DrainTimeout
	if drain <= 0 {
		drain = 5 * time.Minute
	}
	partial := false
	select {
	case <-runDone:
	case <-time.After(drain):
		partial = true
		br.Abort("the drain timed out")
		cancelRun()
		<-runDone
	}
	br.Wait()
	out := &ServeResult{Result: res, Lag: br.Lag(), Partial: partial || runErr != nil}
	if srvErr != nil {
		return out, errors.Join(srvErr, runErr)
	}
	return out, runErr
}

func commonModel(s *topology.Spec) string {
	m := ""
	for _, ws := range [][]topology.Worker{s.Prefill, s.Decode, s.Fused} {
		for _, w := range ws {
			if m != "" && w.Model != m {
				return ""
			}
			m = w.Model
		}
	}
	return m
}

func listenOr(a string) string {
	if a == "" {
		return "127.0.0.1:8000"
	}
	return a
}

// eofSource is the workload of a live run's cluster: empty (requests come
// from the Bridge instead).
type eofSource struct{}

func (eofSource) Next() (*workload.Request, error) { return nil, io.EOF }

// liveKick tells the live driver that the Bridge has requests waiting or
// closed.
type liveKick struct{}

// liveDriver wraps the cluster's driver node: it releases the Bridge's
// requests through the driver (a Release per request, as the driver's own
// timer would, so the driver creates the Job and hands it to the router at
// the emulated time it is taken) and tells the collector the total once
// the Bridge is closed and drained. The driver's own DriverDone (its
// empty source ended at Start) is dropped.
type liveDriver struct {
	cluster.Node
	br        *serve.Bridge
	collector cluster.Addr
	released  int
	closed    bool
	out       []cluster.Envelope
	// pending: a liveKick is on its way (kicks are coalesced: the driver
	// clears it before taking every waiting request).
	pending atomic.Bool
}

func (d *liveDriver) Handle(now time.Duration, msg any) cluster.Ready {
	d.out = d.out[:0]
	keep := func(rd cluster.Ready) {
		for _, e := range rd.Out {
			if _, ok := e.Msg.(cluster.DriverDone); !ok {
				d.out = append(d.out, e)
			}
		}
	}
	if _, ok := msg.(liveKick); !ok {
		keep(d.Node.Handle(now, msg))
		return cluster.Ready{Out: d.out}
	}
	d.pending.Store(false)
	for {
		r, ok, drained := d.br.Take()
		if ok {
			d.released++
			keep(d.Node.Handle(now, cluster.Release{Req: r}))
			continue
		}
		if drained && !d.closed {
			d.closed = true
			d.out = append(d.out, cluster.Envelope{To: d.collector, Msg: cluster.DriverDone{Total: d.released}})
		}
		break
	}
	return cluster.Ready{Out: d.out}
}

// runLive is Run for a live cluster: the same build, clock, shells and
// summary, with the driver fed by the Bridge; it ends when the Bridge is
// closed and every request it released ended (or the run fails, or ctx
// is done).
func runLive(ctx context.Context, spec *topology.Spec, br *serve.Bridge, o ServeOptions, ready chan<- struct{}) (*Result, error) {
	log := o.Logger
	if log == nil {
		log = hclog.New(&hclog.LoggerOptions{Name: "pdemu", Level: hclog.Warn})
	}
	cl, err := cluster.Build(spec, eofSource{})
	if err != nil {
		br.Abort(err.Error())
		return nil, err
	}
	watch(spec, cl, br, nil)
	ld := &liveDriver{Node: cl.Nodes[cl.Driver], br: br, collector: -1}
	for i, k := range cl.Kinds {
		if k == cluster.KindCollector {
			ld.collector = cluster.Addr(i)
		}
	}
	cl.Nodes[cl.Driver] = ld
	ps := borrowSystem(log, o.FreshSystem)
	rs := &runState{done: make(chan struct{})}
	clk := newClock(ps.sys, spec.Workload, rs)
	wclk := clk.(*WallClock)
	br.Attach(clk.Now)
	var deadLetters atomic.Int64
	sub := watchDeadLetters(ps.sys, clk, log, &deadLetters)
	pids := spawn(ps.sys, cl, clk, rs, false)
	start := time.Now()
	clk.Send(0, 0, pids[cl.Driver], cluster.Start{}, 0)
	// Kicks are coalesced: at most one is on its way; the driver takes
	// every waiting request when it gets it.
	kick := func() {
		if ld.pending.CompareAndSwap(false, true) {
			clk.Send(0, 0, pids[cl.Driver], liveKick{}, 0)
		}
	}
	br.SetNotify(kick)
	kick()
	close(ready)
	var runErr error
	select {
	case <-rs.done:
	case <-ctx.Done():
		runErr = ctx.Err()
	}
	wclk.Stop()
	br.SetNotify(nil)
	br.Abort("the emulated run stopped") // no-op for what already ended
	res := &Result{Series: cl.Series, SampleInterval: spec.Workload.SampleInterval, End: clk.Now(), Wall: time.Since(start)}
	stopped := true
	for i := range pids {
		_, err := ps.sys.Root.RequestFuture(pids[i], &queryMsg{}, 10*time.Second).Result()
		stopped = stopped && err == nil
	}
	for _, pid := range pids {
		stopped = stopped && ps.sys.Root.StopFuture(pid).Wait() == nil
	}
	ps.sys.EventStream.Unsubscribe(sub)
	if stopped && rs.panics.Load() == 0 {
		ps.release()
	} else {
		ps.sys.Shutdown()
	}
	summarize(res, spec, cl, eofSource{}, clk, deadLetters.Load(), rs.panics.Load())
	var errs []error
	for _, e := range []error{runErr, rs.error()} {
		if e != nil {
			errs = append(errs, e)
		}
	}
	if n := deadLetters.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("%d dead letters: messages reached actors that were gone (see the log)", n))
	}
	sum := res.Summary.Requests
	if sub := br.Submitted(); len(errs) == 0 && (int64(sum.Total) != sub || sum.Total != sum.Completed+sum.Failed) {
		errs = append(errs, fmt.Errorf("%d requests were submitted over HTTP but %d ended (%d completed, %d failed)", sub, sum.Total, sum.Completed, sum.Failed))
	}
	return res, errors.Join(errs...)
}

// watchedNode runs a node and then lets a watcher look at what happened,
// on the node's own goroutine (so reading the node's jobs and series is
// race-free).
type watchedNode struct {
	cluster.Node
	after func(now time.Duration, msg any, rd cluster.Ready)
}

func (w *watchedNode) Handle(now time.Duration, msg any) cluster.Ready {
	rd := w.Node.Handle(now, msg)
	w.after(now, msg, rd)
	return rd
}

// watch wraps the nodes of cl that the bridge needs to hear from; onEnd
// (may be nil) also sees each ended job, after the bridge.
func watch(spec *topology.Spec, cl *cluster.Cluster, br *serve.Bridge, onEnd func(*gpu.Job, serve.End)) {
	fused := len(spec.Buckets) > 0
	workerName := func(d int) string {
		switch {
		case d < 0:
			return ""
		case fused && d < len(spec.Fused):
			return spec.Fused[d].Name
		case !fused && d < len(spec.Decode):
			return spec.Decode[d].Name
		}
		return fmt.Sprint("worker-", d)
	}
	caps := map[string]int{}
	for _, w := range cl.Workers() {
		caps[w.Name] = w.CapKV
	}
	publish := func(now time.Duration, ss []*metrics.Series) {
		for _, s := range ss {
			p := s.At(now)
			br.SetWorker(serve.WorkerState{Name: s.Worker, Role: s.Kind, Running: p.Running, Waiting: p.Queue, KVUsed: p.KV, KVCap: caps[s.Worker]})
		}
	}
	// Every worker is on /metrics from the start (idle until it works).
	publish(0, cl.Series)
	for i, n := range cl.Nodes {
		name := cl.Names[i]
		var mine []*metrics.Series
		for _, s := range cl.Series {
			if s.Worker == name || (cl.Kinds[i] == cluster.KindBucket && "bucket:"+s.Bucket == name) {
				mine = append(mine, s)
			}
		}
		switch cl.Kinds[i] {
		case cluster.KindDecode, cluster.KindBucket:
			ft := &firstTokens{br: br, name: workerName, jobs: map[int64]*gpu.Job{}}
			cl.Nodes[i] = &watchedNode{Node: n, after: func(now time.Duration, msg any, rd cluster.Ready) {
				ft.after(now, msg, rd)
				publish(now, mine)
			}}
		case cluster.KindPrefill:
			cl.Nodes[i] = &watchedNode{Node: n, after: func(now time.Duration, _ any, _ cluster.Ready) { publish(now, mine) }}
		case cluster.KindCollector:
			cl.Nodes[i] = &watchedNode{Node: n, after: func(now time.Duration, msg any, _ cluster.Ready) {
				m, ok := msg.(cluster.JobEnded)
				if !ok {
					return
				}
				j := m.Job
				e := serve.End{ID: j.Req.ID, Worker: workerName(j.D), Mode: j.Mode.String(), CachedTokens: j.CachedTokens,
					Arrival: j.Arrival, FirstToken: j.FirstToken, Done: j.Done, Failed: j.Failed, Now: now}
				if j.Mode.UsesPrefill() && j.P >= 0 && j.P < len(spec.Prefill) {
					e.Prefill = spec.Prefill[j.P].Name
				}
				if e.Failed != "" && e.Done < e.Arrival {
					e.Done = now
				}
				br.Ended(e)
				if onEnd != nil {
					onEnd(j, e)
				}
			}}
		case cluster.KindRouter:
			var last time.Time
			cl.Nodes[i] = &watchedNode{Node: n, after: func(time.Duration, any, cluster.Ready) {
				if time.Since(last) < 200*time.Millisecond {
					return
				}
				last = time.Now()
				var rs serve.RouterState
				for _, st := range cl.Sessions() {
					rs.Migrations += int64(st.Migrations)
					rs.Fallbacks += int64(st.Fallbacks)
					rs.Blacklists += int64(st.Blacklists)
					rs.Rejections += int64(st.Rejections)
				}
				br.SetRouter(rs)
			}}
		case cluster.KindLink:
			lw := &linkWatch{br: br, name: name}
			cl.Nodes[i] = &watchedNode{Node: n, after: lw.after}
		}
	}
}

// firstTokens follows the jobs a decode or bucket node owns and reports
// each one's first token once the node set it.
type firstTokens struct {
	br   *serve.Bridge
	name func(d int) string
	jobs map[int64]*gpu.Job
}

func (f *firstTokens) after(now time.Duration, msg any, rd cluster.Ready) {
	switch m := msg.(type) {
	case cluster.Admit:
		f.jobs[m.Job.Req.ID] = m.Job
	case cluster.KVReady:
		f.jobs[m.Job.Req.ID] = m.Job
	case cluster.RunJob:
		f.jobs[m.Job.Req.ID] = m.Job
	case cluster.Assign:
		f.jobs[m.Job.Req.ID] = m.Job
	}
	// Report before the jobs leave: a job that ends in this call has its
	// first token set already.
	for id, j := range f.jobs {
		if j.FirstToken > 0 {
			f.br.FirstToken(id, f.name(j.D), j.Arrival, j.FirstToken, now)
			delete(f.jobs, id)
		}
	}
	for _, e := range rd.Out {
		switch m := e.Msg.(type) {
		case cluster.AdmitReply:
			if m.Mode != policy.ModeDirect {
				// Rejected, or Seed/Reseed: the router owns the job again.
				delete(f.jobs, m.Job.Req.ID)
			}
		case cluster.JobEnded:
			delete(f.jobs, m.Job.Req.ID)
		}
	}
}

// linkWatch counts a link's bytes and its busy fraction.
type linkWatch struct {
	br       *serve.Bridge
	name     string
	bytes    int64
	inflight map[int64]bool
	busy     time.Duration // busy emulated time in the current window
	since    time.Duration // start of the current busy stretch
	window   time.Duration // start of the current window
	util     float64
}

func (l *linkWatch) after(now time.Duration, msg any, rd cluster.Ready) {
	if l.inflight == nil {
		l.inflight = map[int64]bool{}
	}
	wasBusy := len(l.inflight) > 0
	if m, ok := msg.(cluster.Transfer); ok {
		l.bytes += m.Job.TransferBytes
		l.inflight[m.Job.Req.ID] = true
	}
	for _, e := range rd.Out {
		if m, ok := e.Msg.(cluster.KVReady); ok {
			delete(l.inflight, m.Job.Req.ID)
		}
	}
	if wasBusy {
		l.busy += now - l.since
	}
	l.since = now
	// One-second windows (emulated): the utilisation of the last full one.
	if now-l.window >= time.Second {
		l.util = min(1, float64(l.busy)/float64(now-l.window))
		l.window, l.busy = now, 0
	}
	l.br.SetLink(serve.LinkState{Name: l.name, Bytes: l.bytes, Utilisation: l.util})
}

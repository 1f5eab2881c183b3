// Package served composes `pdemu serve`: the scenario's cluster run by
// the one runtime (actors.Run, exactly as `pdemu run` runs it) with its
// input taken from an OpenAI-compatible HTTP server (package serve).
//
// Contract:
//
//   - One runner: a served run is an actors.Run of the scenario on the
//     wall clock, open loop, with no wall timeout; serve's node wrappers
//     (serve.Feed, serve.Watch) are installed through Options.Wrap and the
//     Bridge is fed through the run's Injector (Options.Started). Series
//     bounds, the widened sample interval, restart counts, fault
//     schedules and every end-of-run check are Run's.
//   - Nothing is lost: every request submitted over HTTP is released into
//     the cluster and ends there exactly once (Serve checks the count
//     against the Bridge's), or is listed unfinished in a partial result.
//   - A Records sink that is a ClientRecordSink gets each record joined
//     with what its HTTP client saw (client.go): per_request.csv's
//     client_* columns, held back only while the other half is in flight.
//   - Serve returns when ctx is done and the drain is over: new requests
//     get 503 while in-flight ones end; a drain that passes
//     serve.Options.DrainTimeout, or Options.Cut, stops the run partial
//     (stopped_by "drain-timeout" or the cut's cause).
package served

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/serve"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// Options configure Serve.
type Options struct {
	// HTTP configures the server (listen address, limits, model name).
	HTTP serve.Options
	// TimeScale overrides the scenario's time scale (0: the scenario's, or 1).
	TimeScale float64
	Logger    hclog.Logger
	// FreshSystem runs on a new actor system.
	FreshSystem bool
	// Wrap, when set, wraps more nodes after serve's (see actors.Options.Wrap).
	Wrap func(cl *cluster.Cluster, now func() time.Duration) error
	// Records, when set, receives each request's record as it ends and the
	// run keeps none (actors.Options.Records): a server's memory is then
	// bounded by its requests in flight, not by how many it served. A
	// ClientRecordSink gets each record with what its HTTP client saw
	// (RecordClient), once both the request ended and its response was
	// written.
	Records actors.RecordSink
	// Cut, when set and done during the drain (a second SIGINT), stops
	// waiting: the streams still open end with an error, the run stops
	// partial with stopped_by the Cut's cause (an actors.StopCause), and
	// Serve returns its result (the outputs can still be written).
	Cut context.Context
	// SessionTTL and RouterSessions bound the router's per-session state
	// (cluster.ForgetSessions): a session idle for more than SessionTTL of
	// emulated time, or beyond the RouterSessions most recently used, is
	// forgotten as if it had ended (counted in summary.json
	// router.sessions_forgotten). 0: DefaultSessionTTL and
	// DefaultRouterSessions; negative: no such bound.
	SessionTTL     time.Duration
	RouterSessions int
}

// DefaultSessionTTL is how long (emulated time) the router of a served
// run remembers an idle session: an hour, the longest prompt-cache TTL a
// hosted API offers (Anthropic's extended cache TTL; its default is five
// minutes). Agentic sessions resume within it; one that resumes later is
// a new session whose prefix the resident index still finds.
const DefaultSessionTTL = time.Hour

// MaxLinkRows bounds the links.csv rows of a served run (512 KiB of
// samples): later NIC changes are counted in outputs.links_dropped, not
// kept (a run keeps metrics.MaxLinkRows).
const MaxLinkRows = 1 << 14

// MaxSeriesPoints bounds each worker series of a served run (128 KiB):
// past it the series' grid doubles (metrics.Series.SetMaxPoints) and
// instances.csv's interval is widened to a multiple of every series'
// grid (summary.json outputs.instances_interval_ms says which).
const MaxSeriesPoints = 4096

// seriesInterval returns the sample interval of res widened to a
// multiple of every series' grid (served runs coarsen their series).
func seriesInterval(res *actors.Result) time.Duration {
	iv := res.SampleInterval
	if iv <= 0 {
		iv = time.Second // the writer's default, the series' first grid
	}
	widened := false
	for _, s := range res.Series {
		if g := s.Grid(); g > 0 && iv%g != 0 {
			iv, widened = iv/gcd(iv, g)*g, true
		}
	}
	if !widened {
		return res.SampleInterval
	}
	return iv
}

func gcd(a, b time.Duration) time.Duration {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// DefaultRouterSessions bounds the sessions the router of a served run
// remembers: as many as the server's session table (serve.Options.MaxSessions).
const DefaultRouterSessions = 1 << 16

// EvictionSink is implemented by a Records sink that also takes the
// evictions.csv rows as they happen (output.Stream): a served run then
// streams them (cluster.StreamEvictions) instead of keeping them.
type EvictionSink interface {
	Eviction(metrics.EvictionRow) error
}

// Result is a served run's outcome.
type Result struct {
	*actors.Result
	// Lag is how late the emulation reported first tokens and ends, in
	// emulated time (report time − the emulated time of the event).
	Lag serve.LagStats
	// Partial: the run was cut (the drain did not finish or the run failed)
	// and some requests never ended.
	Partial bool
}

// StoppedByDrainTimeout is stopped_by for a served run whose drain passed
// its timeout.
const StoppedByDrainTimeout = "drain-timeout"

// eofSource is the workload source of a served run's cluster: empty (the
// requests come from the Bridge instead).
type eofSource struct{}

func (eofSource) Next() (*workload.Request, error) { return nil, io.EOF }

// Serve runs spec's cluster behind an OpenAI-compatible HTTP server
// until ctx is done; then it drains (new requests get 503, in-flight ones
// end normally), stops the run once every request ended, and returns the
// run's results as actors.Run does.
func Serve(ctx context.Context, spec *topology.Spec, o Options) (*Result, error) {
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
		o.HTTP.Model = serve.CommonModel(&s)
	}
	if ttl := o.SessionTTL; ttl >= 0 && o.HTTP.SessionTTL == 0 {
		// The server's session table forgets a key as the router does.
		if ttl == 0 {
			ttl = DefaultSessionTTL
		}
		o.HTTP.SessionTTL = time.Duration(float64(ttl) / s.Workload.TimeScale)
	}
	if err := serve.CheckListen(listenOr(o.HTTP.Listen), o.HTTP.AllowRemote); err != nil {
		return nil, err
	}
	if o.HTTP.Listener == nil {
		// Bind before the cluster starts: a busy port fails here, with no
		// run, no outputs and no "served 0 requests" line.
		l, err := serve.Listen(listenOr(o.HTTP.Listen))
		if err != nil {
			return nil, err
		}
		o.HTTP.Listener = l
		defer l.Close() // closed already once served; this covers a run that fails first
	}
	workers := map[string]topology.Worker{}
	for _, ws := range [][]topology.Worker{s.Decode, s.Prefill, s.Fused} {
		for _, w := range ws {
			workers[w.Name] = w
		}
	}
	br := serve.NewBridge(serve.BridgeOptions{TimeScale: s.Workload.TimeScale,
		StepGuess: func(worker string, r *workload.Request) time.Duration {
			if p, err := cluster.PerfFor(workers[worker]); err == nil {
				return p.DecodeStepTime(1, int64(r.InputLen))
			}
			return 20 * time.Millisecond
		}})

	// A sink that takes client times gets each record joined with them.
	records := o.Records
	var join *clientJoin
	if cs, ok := o.Records.(ClientRecordSink); ok {
		join = newClientJoin(cs)
		records = join
		br.SetClientSink(join.client)
	}
	var feeder *serve.Feeder
	ready := make(chan struct{})
	opts := actors.Options{
		Logger:      o.Logger,
		Source:      eofSource{},
		WallTimeout: -1, // a server runs until it is stopped
		FreshSystem: o.FreshSystem,
		Records:     records,
		Bounded:     o.Records != nil, // a server runs for ever: bounded summary too
		Wrap: func(cl *cluster.Cluster, now func() time.Duration) error {
			if es, ok := o.Records.(EvictionSink); ok {
				// Before serve wraps the nodes: evictions.csv streams too.
				cl.StreamEvictions(es.Eviction)
			}
			// One context limit: what the cluster admits.
			fit, err := MaxRequestTokens(&s)
			if err != nil {
				return err
			}
			if fit > 0 && (o.HTTP.MaxModelLen <= 0 || fit < o.HTTP.MaxModelLen) {
				o.HTTP.MaxModelLen = fit
			}
			ttl, maxSess := o.SessionTTL, o.RouterSessions
			if ttl == 0 {
				ttl = DefaultSessionTTL
			}
			if maxSess == 0 {
				maxSess = DefaultRouterSessions
			}
			cl.ForgetSessions(ttl, maxSess)
			cl.Links().SetMaxRows(MaxLinkRows)
			for _, sr := range cl.Series {
				sr.SetMaxPoints(MaxSeriesPoints)
			}
			cl.RouterEvents().Bound(metrics.BoundChunks)
			br.Attach(now)
			serve.Watch(&s, cl, br, nil)
			feeder = serve.Feed(cl, br)
			if o.Wrap != nil {
				return o.Wrap(cl, now)
			}
			return nil
		},
		Started: func(in *actors.Injector) {
			feeder.Start(in)
			close(ready)
		},
	}
	// The run outlives ctx: it ends once the drain is over (or the drain
	// times out and cancelRun cuts it).
	runCtx, cancelRun := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelRun(nil)
	runDone := make(chan struct{})
	var res *actors.Result
	var runErr error
	go func() {
		defer close(runDone)
		res, runErr = actors.Run(runCtx, &s, opts)
		if feeder != nil {
			feeder.Stop()
		}
		// Whatever the run did not end, it never will: end the streams.
		br.Abort("the emulated run stopped")
	}()
	// Listen only once the cluster runs (a build error returns at once).
	select {
	case <-ready:
	case <-runDone:
		return wrap(res, br, true), runErr
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
	var cut <-chan struct{}
	if o.Cut != nil {
		cut = o.Cut.Done()
		go func() {
			select {
			case <-cut:
				// End the streams (so the HTTP drain ends), then the run.
				br.Abort("the server was stopped before this request ended")
				cancelRun(cutCause(o.Cut))
			case <-runDone:
			}
		}()
	}
	srvErr := serve.Run(srvCtx, o.HTTP, br)
	br.Close()
	drain := o.HTTP.DrainTimeout
	if drain <= 0 {
		drain = 5 * time.Minute
	}
	t := time.NewTimer(drain)
	defer t.Stop()
	select {
	case <-runDone:
	case <-cut:
		<-runDone
	case <-t.C:
		br.Abort("the drain timed out")
		cancelRun(actors.StopCause(StoppedByDrainTimeout))
		<-runDone
	}
	br.Wait()
	if join != nil {
		// Every relay has reported (the HTTP server is shut down): the
		// records still waiting go on with empty client columns.
		if err := join.flush(); err != nil && runErr == nil {
			runErr = fmt.Errorf("writing the per-request records: %w", err)
		}
	}
	if res != nil {
		br.Judge(&res.Summary, s.Workload.TimeScale)
		res.SampleInterval = seriesInterval(res)
	}
	out := wrap(res, br, runErr != nil)
	if runErr == nil && res != nil {
		sum := res.Summary.Requests
		if sub := br.Submitted(); int64(sum.Total) != sub {
			runErr = fmt.Errorf("%d requests were submitted over HTTP but %d ended (%d completed, %d failed)", sub, sum.Total, sum.Completed, sum.Failed)
		}
	}
	if srvErr != nil {
		return out, errors.Join(srvErr, runErr)
	}
	return out, runErr
}

// cutCause is the stop cause of a cut drain: the Cut's cause if it is an
// actors.StopCause, else "cut".
func cutCause(cut context.Context) error {
	var sc actors.StopCause
	if errors.As(context.Cause(cut), &sc) {
		return sc
	}
	return actors.StopCause("cut")
}

// MaxRequestTokens is the largest request (prompt + output tokens) the
// cluster of spec serves (cluster.LimitsOf): the smaller of its workers'
// context length (max_model_len) and the largest ρ·K_d of its decode (or
// fused) pools; 0 when neither is known. A larger one would fail inside
// the cluster (exceeds-context, exceeds-kv-pool), so the server refuses
// it up front with the context-length error and /v1/models reports it.
func MaxRequestTokens(spec *topology.Spec) (int, error) {
	l, err := cluster.LimitsOf(spec)
	if err != nil {
		return 0, err
	}
	switch {
	case l.Context > 0 && l.Pool > 0:
		return min(l.Context, l.Pool), nil
	case l.Context > 0:
		return l.Context, nil
	}
	return l.Pool, nil
}

func wrap(res *actors.Result, br *serve.Bridge, partial bool) *Result {
	return &Result{Result: res, Lag: br.Lag(), Partial: partial || (res != nil && res.Summary.Partial)}
}

func listenOr(a string) string {
	if a == "" {
		return "127.0.0.1:8000"
	}
	return a
}

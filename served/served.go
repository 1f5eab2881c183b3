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
			if p, err := cluster.PerfFor(workers[worker]); err == nil {
				return p.DecodeStepTime(1, int64(r.InputLen))
			}
			return 20 * time.Millisecond
		}})

	var feeder *serve.Feeder
	ready := make(chan struct{})
	opts := actors.Options{
		Logger:      o.Logger,
		Source:      eofSource{},
		WallTimeout: -1, // a server runs until it is stopped
		FreshSystem: o.FreshSystem,
		Wrap: func(cl *cluster.Cluster, now func() time.Duration) error {
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
	case <-t.C:
		br.Abort("the drain timed out")
		cancelRun(actors.StopCause(StoppedByDrainTimeout))
		<-runDone
	}
	br.Wait()
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

func wrap(res *actors.Result, br *serve.Bridge, partial bool) *Result {
	return &Result{Result: res, Lag: br.Lag(), Partial: partial || (res != nil && res.Summary.Partial)}
}

func listenOr(a string) string {
	if a == "" {
		return "127.0.0.1:8000"
	}
	return a
}

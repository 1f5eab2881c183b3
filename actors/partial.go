package actors

import (
	"context"
	"errors"
	"fmt"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/metrics"
)

// StopCause is a context cancellation cause naming what stopped a run
// (the CLI cancels with StopCause("SIGINT") or StopCause("SIGTERM"); see
// context.WithCancelCause). It becomes summary.json stopped_by.
type StopCause string

func (s StopCause) Error() string { return "stopped by " + string(s) }

// StoppedByWallTimeout is stopped_by for a wall run that passed
// Options.WallTimeout.
const StoppedByWallTimeout = "wall-timeout"

// PartialError is Run's error for a run stopped before every released
// request ended: its Result lists the requests still in the cluster
// (Result.Unfinished) and its Summary is marked partial.
type PartialError struct {
	StoppedBy  string
	Unfinished int
	Err        error // what stopped it (the context's error, the timeout)
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("run stopped by %s with %d requests unfinished: %v", e.StoppedBy, e.Unfinished, e.Err)
}

func (e *PartialError) Unwrap() error { return e.Err }

// errWallTimeout is drive's error when a wall run passes its timeout.
type errWallTimeout struct{ err error }

func (e *errWallTimeout) Error() string { return e.err.Error() }

// stoppedBy says what stopped a run whose clock returned runErr ("" when
// nothing did: the run ended by itself or failed).
func stoppedBy(ctx context.Context, runErr error) string {
	if runErr == nil {
		return ""
	}
	if errors.As(runErr, new(*errWallTimeout)) {
		return StoppedByWallTimeout
	}
	if ctx.Err() == nil || !errors.Is(runErr, ctx.Err()) {
		return ""
	}
	var sc StopCause
	if errors.As(context.Cause(ctx), &sc) {
		return string(sc)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "deadline"
	}
	return "canceled"
}

// markPartial lists the jobs still in the cluster as res.Unfinished (with
// their routing log so far) and marks the summary partial.
func markPartial(res *Result, cl *cluster.Cluster, by string) {
	col := cl.Collector()
	for _, j := range cl.InFlight() {
		rec := col.Unfinished(j)
		if len(rec.RouteLog) == 0 {
			rec.RouteLog = cl.RouteLog(j.Req.ID)
		}
		res.Unfinished = append(res.Unfinished, rec)
	}
	metrics.MarkPartial(&res.Summary, by, len(res.Unfinished))
}

// checkPartial is check for a partial run: every released request either
// ended or is listed unfinished; the run's error is a PartialError (joined
// with any other fault: a node error, dead letters).
func checkPartial(res *Result, cl *cluster.Cluster, by string, runErr, nodeErr error, deadLetters int64) error {
	errs := []error{&PartialError{StoppedBy: by, Unfinished: len(res.Unfinished), Err: runErr}}
	if nodeErr != nil {
		errs = append(errs, nodeErr)
	}
	if deadLetters > 0 {
		errs = append(errs, fmt.Errorf("%d dead letters: messages reached actors that were gone (see the log)", deadLetters))
	}
	r := res.Summary.Requests
	if rel := cl.Released(); rel != r.Total+r.Unfinished {
		errs = append(errs, fmt.Errorf("%d requests were released but %d ended and %d are unfinished", rel, r.Total, r.Unfinished))
	}
	if r.Total != r.Completed+r.Failed+r.Aborted {
		errs = append(errs, fmt.Errorf("requests.total %d != completed %d + failed %d + aborted %d", r.Total, r.Completed, r.Failed, r.Aborted))
	}
	return errors.Join(errs...)
}

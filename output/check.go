package output

import (
	"errors"
	"fmt"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/metrics"
)

// Process exit codes of pdemu (docs/OUTPUTS.md, "Exit codes").
const (
	ExitOK            = 0
	ExitFailure       = 1 // a lost request, a panic, dead letters, a wall run past --wall-timeout
	ExitBadInput      = 2 // bad scenario, trace, flags or --out
	ExitTooManyFailed = 3 // failed share above --max-failed
	ExitWallFidelity  = 4 // --strict-wall and a distorted wall clock
	ExitSIGINT        = 130
	ExitSIGTERM       = 143
)

// DefaultMaxFailed is --max-failed's default: a run in which more than 1 %
// of the requests failed exits ExitTooManyFailed. A healthy configuration
// fails no request; 1 % leaves room for a few pathological requests of a
// held-out trace while a run like dp4 on the Claude Code sessions (1,891 of
// 2,806 failed, 67 %) is far above it.
const DefaultMaxFailed = 0.01

// ExitError is an error with the process exit code it calls for.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the exit code err calls for: 0 for nil, the code of an
// *ExitError in its chain, else ExitFailure.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if errors.As(err, new(*metrics.FidelityError)) {
		return ExitWallFidelity
	}
	return ExitFailure
}

// StopCode is the exit code of a partial run stopped by stoppedBy
// (summary.json stopped_by): 130 for SIGINT, 143 for SIGTERM, 1 otherwise
// (wall-timeout).
func StopCode(stoppedBy string) int {
	switch stoppedBy {
	case "SIGINT":
		return ExitSIGINT
	case "SIGTERM":
		return ExitSIGTERM
	case "bad-record": // actors.StoppedByBadRecord: bad input
		return ExitBadInput
	}
	return ExitFailure
}

// CheckOptions set what Check rejects.
type CheckOptions struct {
	// MaxFailed is the largest failed share (failed / total) accepted
	// (use DefaultMaxFailed; negative: no limit).
	MaxFailed float64
	// StrictWall rejects a wall run whose fidelity is "distorted".
	StrictWall bool
	// AllowEmpty accepts a complete run in which no request ended (an
	// empty workload, or every record skipped as bad).
	AllowEmpty bool
}

// Check judges a finished run: a complete run with no request is bad input
// (ExitBadInput) unless AllowEmpty; a failed share above MaxFailed is
// ExitTooManyFailed, with the count per reason; a distorted wall clock
// under StrictWall is ExitWallFidelity. The first that applies is returned.
func Check(res *actors.Result, o CheckOptions) error {
	s := res.Summary
	if !o.AllowEmpty && !s.Partial && s.Requests.Total == 0 {
		msg := "no request ended: the workload is empty"
		if s.Requests.SkippedBad > 0 {
			msg = fmt.Sprintf("no request ended: all %d records of the trace were skipped as bad", s.Requests.SkippedBad)
		}
		return &ExitError{Code: ExitBadInput, Err: errors.New(msg)}
	}
	if o.MaxFailed >= 0 && s.Requests.Total > 0 && s.Requests.FailedShare > o.MaxFailed {
		return &ExitError{Code: ExitTooManyFailed, Err: fmt.Errorf("too many failed requests (max %.1f%%, --max-failed): %s",
			100*o.MaxFailed, metrics.FailureMessage(s.Requests))}
	}
	if o.StrictWall {
		if err := metrics.StrictWall(s); err != nil {
			return &ExitError{Code: ExitWallFidelity, Err: err}
		}
	}
	return nil
}

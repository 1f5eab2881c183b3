package metrics

import (
	"fmt"
	"time"
)

// Wall-clock fidelity verdicts (summary.json clock.fidelity).
const (
	FidelityOK        = "ok"
	FidelityDistorted = "distorted"
)

// Fidelity bounds (docs/OUTPUTS.md, "clock"). A wall run is distorted when
// its deliveries were late, in emulated time, by more than
// LatenessBoundShare of the run's own TTFT p50 at the 99th percentile (a
// request's TTFT is a chain of a few deliveries, so a p99 lateness of 5 %
// of the median TTFT already moves the tail figures by several percent),
// or when the process was saturated (some delivered message not yet
// handled) more than SaturationBound of the real time: past that point
// messages queue behind each other in the mailboxes, a delay the timer
// lateness does not see.
const (
	LatenessBoundShare = 0.05
	SaturationBound    = 0.5
	// MinLatenessBound floors the lateness bound when the run has no
	// completed request (TTFT p50 = 0).
	MinLatenessBound = time.Millisecond
)

// JudgeWall fills the wall-clock fidelity fields of c: real is the real
// lateness of each timer delivery (sorted ascending), scale the time
// scale, saturated the share of real time the process was saturated and
// ttftP50 the run's TTFT p50 in emulated milliseconds.
func JudgeWall(c *Clock, real []time.Duration, scale, saturated, ttftP50 float64) {
	if scale <= 0 {
		scale = 1
	}
	c.Lateness = LatenessOf(real)
	emu := make([]time.Duration, len(real))
	for i, d := range real {
		emu[i] = time.Duration(float64(d) * scale)
	}
	c.EmulatedLateness = LatenessOf(emu)
	sat := round3(saturated)
	c.SaturatedShare = &sat
	bound := max(LatenessBoundShare*ttftP50, ms(MinLatenessBound))
	c.FidelityBound = fmt.Sprintf("emulated_lateness_ms.p99 <= %.3f (%.0f%% of ttft_ms.p50) and saturated_share <= %.2f",
		bound, 100*LatenessBoundShare, SaturationBound)
	c.Fidelity = FidelityOK
	if c.EmulatedLateness.P99 > bound || saturated > SaturationBound {
		c.Fidelity = FidelityDistorted
	}
}

// WallWarning is the terminal warning for a distorted wall run ("" when
// the run is not distorted).
func WallWarning(c Clock) string {
	if c.Fidelity != FidelityDistorted || c.EmulatedLateness == nil {
		return ""
	}
	sat := 0.0
	if c.SaturatedShare != nil {
		sat = *c.SaturatedShare
	}
	return fmt.Sprintf("wall clock distorted at time-scale %g: deliveries were late by p50 %.3f / p99 %.3f / max %.3f emulated ms "+
		"(real p99 %.3f ms) and the process was saturated %.0f%% of the time; bound: %s. "+
		"Emulated latencies are inflated: lower --time-scale or use --clock virtual",
		c.TimeScale, c.EmulatedLateness.P50, c.EmulatedLateness.P99, c.EmulatedLateness.Max,
		c.Lateness.P99, 100*sat, c.FidelityBound)
}

// FidelityError is returned by StrictWall for a distorted wall run.
type FidelityError struct{ Clock Clock }

func (e *FidelityError) Error() string { return "--strict-wall: " + WallWarning(e.Clock) }

// StrictWall returns a *FidelityError when s is a distorted wall run (the
// CLI's --strict-wall exits 4 with it), nil otherwise.
func StrictWall(s Summary) error {
	if s.Clock.Fidelity == FidelityDistorted {
		return &FidelityError{Clock: s.Clock}
	}
	return nil
}

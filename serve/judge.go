package serve

import (
	"fmt"
	"time"

	"github.com/pdemu/pdemu/metrics"
)

// ServedBoundMin is the least lateness bound of a served run: a client
// that gets its first token up to this late (wall time) sees no
// distortion, however short the emulated TTFT.
const ServedBoundMin = 50 * time.Millisecond

// Judge puts the lateness the clients saw into the summary and
// lets it, not the wall clock's timer lateness, decide the distortion
// verdict and warning: a served run is distorted when the first tokens'
// p99 report lateness, or the p99 of per_request.csv's client_late_ms,
// passed max(ServedBoundMin, 5 % of the TTFT p50 in wall time); the
// warning then cites both figures (client lateness p90/p99/max). An idle server (few or no requests, all on time) never warns.
func (b *Bridge) Judge(sum *metrics.Summary, scale float64) {
	bound := max(ServedBoundMin, time.Duration(0.05*sum.TTFT.P50/scale*float64(time.Millisecond)))
	sl := b.ServedLateness(bound)
	sum.Served = sl
	wall := metrics.WallWarning(sum.Clock)
	kept := sum.Warnings[:0]
	for _, w := range sum.Warnings {
		if w != wall || wall == "" {
			kept = append(kept, w)
		}
	}
	sum.Warnings = kept
	sum.Clock.FidelityBound = fmt.Sprintf("served: first-token lateness p99 <= %v (max(%v, 5%% of TTFT p50 / time scale))", bound, ServedBoundMin)
	sum.Clock.Fidelity = metrics.FidelityOK
	if sl != nil && sl.Late {
		sum.Clock.Fidelity = metrics.FidelityDistorted
		client := ""
		if c := sl.Client; c != nil {
			client = fmt.Sprintf("; clients saw their first token (a stream) or response later than the emulated TTFT (E2E) by p90 %.1f / p99 %.1f / max %.1f wall ms over %d requests (per_request.csv client_late_ms)",
				c.P90, c.P99, c.Max, c.Samples)
		}
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("clients got their first tokens late: p50 %.1f / p99 %.1f / max %.1f wall ms behind the emulated times over %d requests (ends: p99 %.1f ms)%s; bound %.1f ms. "+
			"The emulator could not keep up with this load at time-scale %g: client-side latencies are inflated; lower --time-scale or the load",
			sl.FirstToken.P50, sl.FirstToken.P99, sl.FirstToken.Max, sl.FirstToken.Samples, sl.End.P99, client, sl.BoundMS, scale))
	}
}

package output

import (
	"fmt"
	"io"

	"github.com/pdemu/pdemu/metrics"
)

// PrintWarnings writes summary.json's warnings to w (the terminal), one
// "WARNING: " line each; nothing for a clean run.
func PrintWarnings(w io.Writer, s metrics.Summary) {
	for _, m := range s.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", m)
	}
}

// PrintExplain writes the closing note that explains the run's latency:
// the failed share, the median of each TTFT part, and what the slowest
// requests' (TTFT ≥ p99) time to first token was made of.
func PrintExplain(w io.Writer, s metrics.Summary) {
	fmt.Fprintf(w, "failed    %d of %d (%.2f%%)\n", s.Requests.Failed, s.Requests.Total, 100*s.Requests.FailedShare)
	p := s.TTFTParts
	fmt.Fprintf(w, "ttft p50 parts ms  route %.1f  p_queue %.1f  prefill %.1f  transfer %.1f  kv_wait %.1f  d_prefill %.1f  first_token %.1f\n",
		p.Route.P50, p.PQueue.P50, p.Prefill.P50, p.Transfer.P50, p.KVWait.P50, p.DPrefill.P50, p.FirstToken.P50)
	t := s.TTFTTail
	if t.Requests == 0 {
		return
	}
	fmt.Fprintf(w, "ttft tail %d requests with ttft >= %.1f ms (p99); mean parts ms:", t.Requests, t.Threshold)
	for _, n := range metrics.TTFTPartNames {
		fmt.Fprintf(w, "  %s %.1f", n, t.MeanMS[n])
	}
	fmt.Fprintf(w, "; made mostly of %s\n", t.Dominant)
}

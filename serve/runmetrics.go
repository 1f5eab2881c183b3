package serve

import (
	"net/http"
	"time"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/topology"
)

// RunMetrics are the live Prometheus metrics of a wall-clock Run (pdemu
// run --clock wall --metrics-listen): the same registry and names as
// pdemu serve's /metrics (Metrics), fed by the same node watchers
// (Watch, as a served run uses them). The cluster-state series (workers' running,
// waiting and KV, the router's counters, the links' bytes, the clock lag)
// are published into a Bridge that takes no requests and read from
// its Snapshot on every scrape; the per-request series are observed when
// the collector ends each job:
//
//   - vllm:time_to_first_token_seconds: first token − arrival;
//   - vllm:e2e_request_latency_seconds, prompt/generation tokens, prefix
//     cache queries/hits, request_success_total (finished_reason "length":
//     an emulated request always produces its OutputLen tokens) and
//     pdemu_requests_total by mode: on completion;
//   - vllm:inter_token_latency_seconds: the emulated decode has no
//     per-token events, so each completed request contributes OutputLen−1
//     observations of its mean inter-token time (done − first token) /
//     (OutputLen − 1), the same pacing serve's streams use;
//   - pdemu_requests_failed_total: on a failed end, by reason.
//
// Latencies are in emulated seconds. The HTTP-only series (http errors,
// client disconnects, in-flight) stay at zero. After the run the emulated
// clock of the snapshot stays at the run's end.
type RunMetrics struct {
	spec *topology.Spec
	br   *Bridge
	met  *Metrics
}

// NewRunMetrics returns the metrics of a run of spec (model label: the
// model every worker serves, or "" when they differ).
func NewRunMetrics(spec *topology.Spec) *RunMetrics {
	br := NewBridge(BridgeOptions{TimeScale: spec.Workload.TimeScale})
	return &RunMetrics{spec: spec, br: br, met: NewMetrics(CommonModel(spec), br.Snapshot)}
}

// Handler serves the metrics in the Prometheus text format.
func (m *RunMetrics) Handler() http.Handler { return m.met.Handler() }

// Wrap wraps cl's nodes so that they feed m, on the run's emulated clock
// now (actors.Options.Wrap).
func (m *RunMetrics) Wrap(cl *cluster.Cluster, now func() time.Duration) error {
	m.br.Attach(now)
	Watch(m.spec, cl, m.br, m.ended)
	return nil
}

// Finish freezes the snapshot's emulated clock at the run's end.
func (m *RunMetrics) Finish(end time.Duration) {
	m.br.Attach(func() time.Duration { return end })
}

// ended observes one ended job (on the collector's goroutine).
func (m *RunMetrics) ended(j *gpu.Job, e End) {
	if e.Failed != "" {
		m.met.Failed(e.Failed)
		return
	}
	ev := Event{Kind: EvToken, Worker: e.Worker, Prefill: e.Prefill, Mode: e.Mode, CachedTokens: e.CachedTokens}
	if e.FirstToken > 0 {
		ev.Since = e.FirstToken - e.Arrival
		m.met.Token(ev, 0)
		if n := j.Req.OutputLen - 1; n > 0 && e.Done > e.FirstToken {
			step := (e.Done - e.FirstToken) / time.Duration(n)
			prev := ev.Since
			for i := 1; i <= n; i++ {
				ev.Index, ev.Since = i, prev+step
				m.met.Token(ev, prev)
				prev = ev.Since
			}
		}
	}
	ev.Kind, ev.Index, ev.Since = EvDone, 0, e.Done-e.Arrival
	ev.Queue, ev.PrefillTime = e.Queue, e.PrefillTime
	if e.FirstToken > 0 {
		ev.DecodeTime = e.Done - e.FirstToken
	}
	m.met.Done(ev, j.Req.InputLen, j.Req.OutputLen, "length")
}

// CommonModel is the model every worker of spec serves ("" when they
// differ).
func CommonModel(s *topology.Spec) string {
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

package serve

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the live Prometheus metrics of a served (or wall-clock run)
// cluster, on their own registry. Per-request series are observed by the
// server as events come; per-worker gauges, router and link counters and
// the clock lag are read from Snapshot() on every scrape.
//
// Names follow vLLM's (docs.vllm.ai, "Production Metrics") with labels
// model_name and worker; pdemu's own are prefixed pdemu_. Latencies are in
// emulated seconds.
type Metrics struct {
	Registry *prometheus.Registry
	model    string

	ttft, itl, e2e     *prometheus.HistogramVec
	prompt, generation *prometheus.CounterVec
	cacheQ, cacheHit   *prometheus.CounterVec
	success            *prometheus.CounterVec
	modes              *prometheus.CounterVec
	failed             *prometheus.CounterVec
	httpErrors         *prometheus.CounterVec
	disconnects        prometheus.Counter
	inflight           prometheus.Gauge
}

// vLLM's bucket boundaries (vllm/v1/metrics/loggers.py).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	e2eBuckets  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// NewMetrics registers the metrics of model on a new registry; snap (may be
// nil) is read on every scrape for the cluster-state series.
func NewMetrics(model string, snap func() Snapshot) *Metrics {
	return NewMetricsWith(model, snap, nil)
}

// NewMetricsWith is NewMetrics with labels added to every series (e.g.
// group="1" for 'pdemu serve --group 1/N', so a fleet's scrapes stay
// apart); nil adds none.
func NewMetricsWith(model string, snap func() Snapshot, labels prometheus.Labels) *Metrics {
	reg := prometheus.NewRegistry()
	var r prometheus.Registerer = reg
	if len(labels) > 0 {
		r = prometheus.WrapRegistererWith(labels, reg)
	}
	wl := []string{"model_name", "worker"}
	m := &Metrics{
		Registry: reg,
		model:    model,
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vllm:time_to_first_token_seconds",
			Help: "Time to first token (emulated seconds).", Buckets: ttftBuckets}, wl),
		itl: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vllm:inter_token_latency_seconds",
			Help: "Time between consecutive output tokens (emulated seconds).", Buckets: itlBuckets}, wl),
		e2e: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vllm:e2e_request_latency_seconds",
			Help: "End-to-end request latency (emulated seconds).", Buckets: e2eBuckets}, wl),
		prompt: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:prompt_tokens_total",
			Help: "Prompt tokens of completed requests."}, wl),
		generation: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:generation_tokens_total",
			Help: "Generated tokens of completed requests."}, wl),
		cacheQ: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:prefix_cache_queries_total",
			Help: "Prompt tokens looked up in a prefix cache (completed requests)."}, wl),
		cacheHit: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:prefix_cache_hits_total",
			Help: "Prompt tokens served from a cache (completed requests)."}, wl),
		success: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total",
			Help: "Completed requests by finish reason."}, []string{"model_name", "worker", "finished_reason"}),
		modes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pdemu_requests_total",
			Help: "Completed requests by routing mode."}, []string{"model_name", "worker", "mode"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pdemu_requests_failed_total",
			Help: "Requests the cluster failed, by reason."}, []string{"model_name", "reason"}),
		httpErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pdemu_http_errors_total",
			Help: "Requests answered with an error, by HTTP status and error code."}, []string{"status", "code"}),
		disconnects: prometheus.NewCounter(prometheus.CounterOpts{Name: "pdemu_client_disconnects_total",
			Help: "Requests whose client went away (or stopped reading) before the end; the cluster still ran them to the end."}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pdemu_http_requests_in_flight",
			Help: "Requests admitted and not yet ended."}),
	}
	r.MustRegister(m.ttft, m.itl, m.e2e, m.prompt, m.generation, m.cacheQ, m.cacheHit, m.success,
		m.modes, m.failed, m.httpErrors, m.disconnects, m.inflight)
	if snap != nil {
		r.MustRegister(&snapshotCollector{model: model, snap: snap})
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Token records output token ev (ITL against the previous token's Since).
func (m *Metrics) Token(ev Event, prev time.Duration) {
	if ev.Index == 0 {
		m.ttft.WithLabelValues(m.model, ev.Worker).Observe(ev.Since.Seconds())
		return
	}
	m.itl.WithLabelValues(m.model, ev.Worker).Observe((ev.Since - prev).Seconds())
}

// Done records a completed request.
func (m *Metrics) Done(ev Event, promptTokens, outputTokens int, finish string) {
	w := ev.Worker
	m.e2e.WithLabelValues(m.model, w).Observe(ev.Since.Seconds())
	m.prompt.WithLabelValues(m.model, w).Add(float64(promptTokens))
	m.generation.WithLabelValues(m.model, w).Add(float64(outputTokens))
	m.cacheQ.WithLabelValues(m.model, w).Add(float64(promptTokens))
	m.cacheHit.WithLabelValues(m.model, w).Add(float64(ev.CachedTokens))
	m.success.WithLabelValues(m.model, w, finish).Inc()
	m.modes.WithLabelValues(m.model, w, ev.Mode).Inc()
}

// Failed records a request the cluster failed.
func (m *Metrics) Failed(reason string) { m.failed.WithLabelValues(m.model, reason).Inc() }

// snapshotCollector turns a Snapshot into const metrics at scrape time. It
// is an unchecked collector (Describe sends nothing): the set of workers
// and links is the cluster's.
type snapshotCollector struct {
	model string
	snap  func() Snapshot
}

func (c *snapshotCollector) Describe(chan<- *prometheus.Desc) {}

var (
	descRunning  = prometheus.NewDesc("vllm:num_requests_running", "Requests in the worker's running batch.", []string{"model_name", "worker", "role"}, nil)
	descWaiting  = prometheus.NewDesc("vllm:num_requests_waiting", "Requests queued on the worker.", []string{"model_name", "worker", "role"}, nil)
	descKVUsage  = prometheus.NewDesc("vllm:kv_cache_usage_perc", "KV cache usage, 0 to 1 (1 = full).", []string{"model_name", "worker", "role"}, nil)
	descGPUUsage = prometheus.NewDesc("vllm:gpu_cache_usage_perc", "KV cache usage, 0 to 1 (vLLM v0 name of kv_cache_usage_perc).", []string{"model_name", "worker", "role"}, nil)
	descKVUsed   = prometheus.NewDesc("pdemu_kv_used_tokens", "KV tokens held by the worker.", []string{"model_name", "worker", "role"}, nil)
	descMigr     = prometheus.NewDesc("pdemu_router_migrations_total", "Sessions moved to another decode worker.", []string{"model_name"}, nil)
	descFallback = prometheus.NewDesc("pdemu_router_fallbacks_total", "Requests that fell back to a fresh prefill.", []string{"model_name"}, nil)
	descBlack    = prometheus.NewDesc("pdemu_router_blacklists_total", "Workers blacklisted for a request after a rejection.", []string{"model_name"}, nil)
	descReject   = prometheus.NewDesc("pdemu_router_rejections_total", "Admission rejections.", []string{"model_name"}, nil)
	descLinkB    = prometheus.NewDesc("pdemu_link_bytes_total", "KV bytes moved over the link.", []string{"model_name", "link"}, nil)
	descLinkU    = prometheus.NewDesc("pdemu_link_utilisation", "Fraction of emulated time the link had a transfer in flight over the last emulated second, 0 to 1.", []string{"model_name", "link"}, nil)
	descLag      = prometheus.NewDesc("pdemu_clock_lag_seconds", "How far emulated time is behind wall time × time scale (emulated seconds).", []string{"model_name"}, nil)
	descEmu      = prometheus.NewDesc("pdemu_emulated_seconds", "Emulated clock.", []string{"model_name"}, nil)
)

func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.snap()
	g := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{c.model}, l...)...)
	}
	n := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append([]string{c.model}, l...)...)
	}
	for _, w := range s.Workers {
		g(descRunning, float64(w.Running), w.Name, w.Role)
		g(descWaiting, float64(w.Waiting), w.Name, w.Role)
		g(descKVUsed, float64(w.KVUsed), w.Name, w.Role)
		if w.KVCap > 0 {
			u := float64(w.KVUsed) / float64(w.KVCap)
			g(descKVUsage, u, w.Name, w.Role)
			g(descGPUUsage, u, w.Name, w.Role)
		}
	}
	n(descMigr, float64(s.Router.Migrations))
	n(descFallback, float64(s.Router.Fallbacks))
	n(descBlack, float64(s.Router.Blacklists))
	n(descReject, float64(s.Router.Rejections))
	for _, l := range s.Links {
		n(descLinkB, float64(l.Bytes), l.Name)
		g(descLinkU, l.Utilisation, l.Name)
	}
	g(descLag, s.Lag.Seconds())
	g(descEmu, s.Emulated.Seconds())
}

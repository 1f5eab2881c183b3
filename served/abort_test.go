package served

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/promtest"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/serve"
)

// scrape sums the samples of each metric family on /metrics (counters,
// gauges; histograms by sample count), by family and by the value of
// label (when not "").
func scrape(t *testing.T, base, label string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for name, f := range promtest.Scrape(t, base+"/metrics") {
		for _, m := range f.GetMetric() {
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			out[name] += v
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[name+"{"+l.GetValue()+"}"] += v
				}
			}
		}
	}
	return out
}

// Issue 21 row 2: when a client disconnects mid-stream the emulated
// request is aborted as vLLM aborts it: it leaves the decode batch (the
// running gauge drops to 0 long before its 2,000 tokens would have been
// decoded), ends once as aborted (summary, per_request state,
// request_success_total{finished_reason="abort"}) and the run's
// conservation check holds.
func TestServeAbortsOnDisconnect(t *testing.T) {
	for _, sc := range []string{scenarios.Default, "buckets-3.hcl"} {
		t.Run(sc, func(t *testing.T) { abortsOnDisconnect(t, sc) })
	}
}

func abortsOnDisconnect(t *testing.T, scenario string) {
	base, stop := startServe(t, scenario, Options{TimeScale: 1})
	const streams = 4
	for i := range streams {
		ctx, cancel := context.WithCancel(context.Background())
		body := `{"model":"qwen3-coder-30b-a3b","stream":true,"max_tokens":2000,"messages":[{"role":"user","content":"a very long answer please ` + strings.Repeat("x", i) + `"}]}`
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.True(t, bufio.NewScanner(res.Body).Scan(), "first chunk")
		cancel() // the client goes away after its first token
		res.Body.Close()
	}
	// 2,000 tokens take ~30 s emulated (= wall, time scale 1); the batch
	// empties as soon as the aborts arrive.
	var running float64 = -1
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m := scrape(t, base, "finished_reason")
		running = m["vllm:num_requests_running"]
		if running == 0 && m["vllm:request_success_total{abort}"] == streams {
			break
		}
	}
	assert.Zero(t, running, "the aborted requests left the decode batch")
	m := scrape(t, base, "finished_reason")
	assert.EqualValues(t, streams, m["vllm:request_success_total{abort}"])
	assert.EqualValues(t, streams, m["pdemu_client_disconnects_total"])
	out, err := stop()
	require.NoError(t, err, "conservation: every request submitted ended once")
	sum := out.Summary.Requests
	assert.Equal(t, streams, sum.Total)
	assert.Equal(t, streams, sum.Aborted)
	assert.Zero(t, sum.Failed, "an abort is not a failure")
	assert.Zero(t, sum.FailedShare)
	for _, r := range out.Records {
		assert.Equal(t, metrics.StateAborted, r.State)
		assert.Less(t, r.E2E, 10*time.Second, "request %d stayed %v", r.ID, r.E2E)
	}
	assert.Less(t, out.End, 15*time.Second, "the run did not wait for the abandoned decodes")
}

// Issue 21 row 11 against the real cluster: before any request, every
// family of vLLM's reference dashboard has a zero series per decode
// worker (the workers are published before the server starts).
func TestServeDashboardFamiliesAtStart(t *testing.T) {
	base, stop := startServe(t, scenarios.Default, Options{TimeScale: 10})
	m := scrape(t, base, "worker")
	for _, name := range serve.DashboardFamilies {
		_, ok := m[name]
		assert.True(t, ok, "%s missing at start", name)
		if name != "vllm:gpu_cache_usage_perc" && name != "vllm:num_requests_running" && name != "vllm:num_requests_waiting" {
			assert.Zero(t, m[name], name)
		}
	}
	for _, w := range []string{"d0", "d1", "d2"} {
		_, ok := m["vllm:e2e_request_latency_seconds{"+w+"}"]
		assert.True(t, ok, "a series for %s", w)
	}
	_, err := stop()
	require.NoError(t, err)
}

package main

import (
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/promtest"
)

// metricSum sums a family over all its series; 0 for one not exposed
// (a counter vector has no series before its first increment).
func metricSum(fams promtest.Families, name string) float64 {
	return max(promtest.Sum(fams, name, nil), 0)
}

// pdemu run --clock wall --metrics-listen serves pdemu serve's /metrics
// during the run and (with --metrics-linger) after it: the final scrape's
// prompt-token counter is the sum of per_request.csv's input_tokens.
func TestRunServesLiveMetrics(t *testing.T) {
	addr := freeAddr(t)
	dir := filepath.Join(t.TempDir(), "wall")
	r := startCLI(t, "run", "--clock", "wall", "--var", "sessions=2", "--max-requests", "6", "--time-scale", "20",
		"--metrics-listen", addr, "--metrics-linger", "2m", "-q", "--out", dir)

	url := "http://" + addr + "/metrics"
	var fams promtest.Families
	sawWorkers := false
	require.Eventually(t, func() bool {
		f, err := promtest.Get(url)
		if err != nil {
			return false
		}
		fams = f
		sawWorkers = sawWorkers || len(f["vllm:num_requests_running"].GetMetric()) > 0
		return metricSum(f, "vllm:request_success_total")+metricSum(f, "pdemu_requests_failed_total") == 6
	}, 2*time.Minute, 50*time.Millisecond, "the run never ended 6 requests on /metrics: %s", r.stderr.String())
	assert.True(t, sawWorkers, "per-worker gauges are served")

	r.cancel() // ends the linger; the outputs were written before it
	require.NoError(t, r.wait(t, 30*time.Second, "the run after the linger was cancelled"), r.stderr.String())
	_, err := http.Get(url)
	assert.Error(t, err, "the metrics server stops with the command")

	rows, col := readPerRequest(t, dir, "state", "input_tokens", "output_tokens")
	require.Len(t, rows, 6, "6 requests")
	var in, out float64
	completed := 0
	for _, r := range rows {
		if r[col["state"]] != "completed" {
			continue
		}
		completed++
		a, err := strconv.Atoi(r[col["input_tokens"]])
		require.NoError(t, err)
		b, err := strconv.Atoi(r[col["output_tokens"]])
		require.NoError(t, err)
		in, out = in+float64(a), out+float64(b)
	}
	require.Positive(t, completed)
	t.Logf("completed %d, input tokens %v, output tokens %v, emulated %vs", completed, in, out, metricSum(fams, "pdemu_emulated_seconds"))
	assert.Equal(t, in, metricSum(fams, "vllm:prompt_tokens_total"))
	assert.Equal(t, out, metricSum(fams, "vllm:generation_tokens_total"))
	assert.Equal(t, float64(completed), metricSum(fams, "vllm:time_to_first_token_seconds"))
	assert.Equal(t, float64(completed), metricSum(fams, "vllm:e2e_request_latency_seconds"))
	assert.Equal(t, out-float64(completed), metricSum(fams, "vllm:inter_token_latency_seconds"))
	assert.Positive(t, metricSum(fams, "pdemu_emulated_seconds"))
}

// --metrics-listen is refused on the virtual clock and on a non-loopback
// address without --allow-remote (usage errors, exit 2).
func TestRunMetricsListenUsage(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--metrics-listen", "127.0.0.1:0"},
		{"run", "--clock", "virtual", "--metrics-listen", "127.0.0.1:0"},
		{"run", "--clock", "wall", "--metrics-listen", "0.0.0.0:0"},
		{"run", "--clock", "wall", "--allow-remote"},
	} {
		args = append(args, "--out", filepath.Join(t.TempDir(), "x"))
		_, _, err := runCLI(t, args...)
		require.Error(t, err, "%v", args)
		assert.Equal(t, 2, exitCode(err), "%v: %v", args, err)
	}
}

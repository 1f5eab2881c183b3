package fleetserve_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/fleetserve"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/topology"
)

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

func errParam(m map[string]any) any {
	e, _ := m["error"].(map[string]any)
	return e["param"]
}

func TestAdminErrors(t *testing.T) {
	fu := startFleet(t, fleetserve.Options{TimeScale: 10})
	a := fu.listing.Admin + "/admin/workers"
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{`, 400},
		{`{"action":"add","name":"x","role":"decode","colour":"red"}`, 400}, // unknown field
		{`{"action":"grow","name":"x"}`, 400},
		{`{"action":"add","role":"decode"}`, 400},
		{`{"action":"add","name":"x","role":"router"}`, 400},
		{`{"action":"add","name":"x","role":"decode","like":"d9"}`, 404},
		{`{"action":"add","name":"d0","role":"decode"}`, 400}, // exists
		{`{"action":"add","name":"x","role":"decode","gpu":"NoSuchGPU"}`, 400},
		{`{"action":"drain","name":"d9"}`, 404},
	} {
		code, m := post(t, a, tc.body)
		assert.Equal(t, tc.status, code, "%s: %v", tc.body, m)
		assert.Contains(t, m, "error", tc.body)
	}
	code, _ := post(t, a, `{"action":"drain","name":"d2"}`)
	require.Equal(t, http.StatusAccepted, code)
	require.Eventually(t, func() bool {
		code, _ := post(t, a, `{"action":"drain","name":"d2"}`)
		return code == http.StatusConflict // gone
	}, 5*time.Second, 10*time.Millisecond)
	req, _ := http.NewRequest(http.MethodDelete, a, nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	fu.stop(t)
}

func TestEndpointErrors(t *testing.T) {
	fu := startFleet(t, fleetserve.Options{TimeScale: 10})
	url := fu.chatURLs()
	msgs := `"messages":[{"role":"user","content":"` + strings.Repeat("look at the code. ", 20) + `"}]`
	code, m := post(t, url["p0"], `{"model":"pdemu","max_tokens":4,`+msgs+`}`)
	assert.Equal(t, 400, code)
	assert.Equal(t, "max_tokens", errParam(m))
	code, m = post(t, url["d0"], `{"model":"pdemu","max_tokens":4,`+msgs+`,"kv_transfer_params":{"do_remote_decode":true}}`)
	assert.Equal(t, 400, code)
	assert.Equal(t, "kv_transfer_params", errParam(m))
	code, m = post(t, url["d0"], `{"model":"pdemu","max_tokens":4,`+msgs+`,"kv_transfer_params":{"do_remote_prefill":"yes"}}`)
	assert.Equal(t, 400, code)
	assert.Equal(t, "kv_transfer_params", errParam(m))
	assert.Contains(t, m["error"].(map[string]any)["message"], "do_remote_prefill")
	// Incomplete parameters: vLLM ignores them and prefills locally.
	code, m = post(t, url["d0"], `{"model":"pdemu","max_tokens":4,`+msgs+`,"kv_transfer_params":{"do_remote_prefill":true}}`)
	require.Equal(t, 200, code, "%v", m)
	assert.Equal(t, "Direct", m["pdemu"].(map[string]any)["mode"])
	// A real hand-off sent with the wrong port: nothing there.
	code, p := post(t, url["p0"], `{"model":"pdemu","max_tokens":1,`+msgs+`,"kv_transfer_params":{"do_remote_decode":true}}`)
	require.Equal(t, 200, code)
	kv := p["kv_transfer_params"].(map[string]any)
	kv["remote_port"] = 1
	b, _ := json.Marshal(kv)
	code, m = post(t, url["d1"], `{"model":"pdemu","max_tokens":4,`+msgs+`,"kv_transfer_params":`+string(b)+`}`)
	assert.Equal(t, 500, code)
	assert.Contains(t, m["error"].(map[string]any)["message"], "unknown remote engine")
	fu.stop(t)
	rr, err := fu.res.RunResult(loadSpec(t))
	require.NoError(t, err)
	assert.Equal(t, 3, rr.Summary.Requests.Total, "the refused calls never started; the failed pull is a failed row")
	assert.Equal(t, 1, rr.Summary.Requests.Failed)
}

// An added worker loads its weights: 61 GB at 0.5 GB/s is 122 s emulated.
func TestStartupDelay(t *testing.T) {
	fu := startFleet(t, fleetserve.Options{TimeScale: 100, WeightsBandwidth: 0.5e9})
	start := time.Now()
	code, m := post(t, fu.listing.Admin+"/admin/workers", `{"action":"add","name":"d9","role":"decode"}`)
	require.Equal(t, http.StatusCreated, code, "%v", m)
	assert.Equal(t, "starting", m["state"])
	code, _ = post(t, m["url"].(string)+"/v1/chat/completions", `{"model":"pdemu","max_tokens":2,"messages":[{"role":"user","content":"hi there"}]}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	var ready time.Duration
	require.Eventually(t, func() bool {
		resp, err := http.Get(m["url"].(string) + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		ready = time.Since(start)
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 5*time.Millisecond)
	// 122 s emulated at scale 100 is 1.22 s of wall time (a lower bound:
	// the worker must not be ready before, however fast the machine).
	assert.GreaterOrEqual(t, ready, 1200*time.Millisecond)
	fu.stop(t)
}

// A bucketed scenario's fused workers are plain vLLM-like pods.
func TestFusedEndpoints(t *testing.T) {
	spec := testkit.Scenario(t, "buckets-3", topology.Options{})
	fu := startFleetOf(t, spec, fleetserve.Options{TimeScale: 10})
	require.Len(t, fu.listing.Workers, len(spec.Fused))
	var s0 string
	for _, w := range fu.listing.Workers {
		assert.Equal(t, "fused", w.Role)
		if w.Worker == "s0" {
			s0 = w.URL + "/v1/chat/completions"
		}
	}
	msgs := `"messages":[{"role":"user","content":"` + strings.Repeat("look at the code. ", 20) + `"}]`
	code, m := post(t, s0, `{"model":"pdemu","max_tokens":4,`+msgs+`}`)
	require.Equal(t, 200, code, "%v", m)
	assert.Equal(t, "Fused", m["pdemu"].(map[string]any)["mode"])
	code, m = post(t, s0, `{"model":"pdemu","max_tokens":4,`+msgs+`,"kv_transfer_params":{"do_remote_decode":true}}`)
	assert.Equal(t, 400, code)
	assert.Equal(t, "kv_transfer_params", errParam(m))
	fu.stop(t)
	rr, err := fu.res.RunResult(spec)
	require.NoError(t, err)
	require.Len(t, rr.Records, 1)
	assert.Equal(t, "s0", rr.Records[0].D)
	assert.Equal(t, "Fused", rr.Records[0].Mode)
}

// A decode call may stream (as production-stack's router streams the
// decode response back): one SSE chunk per token, then [DONE].
func TestStreamingDecode(t *testing.T) {
	fu := startFleet(t, fleetserve.Options{TimeScale: 10})
	url := fu.chatURLs()
	msgs := `"messages":[{"role":"user","content":"` + strings.Repeat("stream the answer. ", 20) + `"}]`
	code, p := post(t, url["p0"], `{"model":"pdemu","max_tokens":1,`+msgs+`,"kv_transfer_params":{"do_remote_decode":true}}`)
	require.Equal(t, 200, code)
	kv, _ := json.Marshal(p["kv_transfer_params"])
	resp, err := http.Post(url["d2"], "application/json", strings.NewReader(`{"model":"pdemu","max_tokens":12,"stream":true,`+
		`"stream_options":{"include_usage":true},`+msgs+`,"kv_transfer_params":`+string(kv)+`}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n\n")
	require.Equal(t, "data: [DONE]", lines[len(lines)-1])
	var tokens int
	var mode string
	for _, l := range lines[:len(lines)-1] {
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Pdemu *struct{ Mode string } `json:"pdemu"`
		}
		require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &c), l)
		if len(c.Choices) == 1 && c.Choices[0].Delta.Content != "" {
			tokens++
		}
		if c.Pdemu != nil {
			mode = c.Pdemu.Mode
		}
	}
	assert.Equal(t, 12, tokens)
	assert.Equal(t, "Seed", mode, "the streamed decode pulled its KV")
	fu.stop(t)
}

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
	url := map[string]string{}
	for _, w := range fu.listing.Workers {
		url[w.Worker] = w.URL + "/v1/chat/completions"
	}
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

// An added worker loads its weights: 61 GB at 2 GB/s is 30.5 s emulated.
func TestStartupDelay(t *testing.T) {
	fu := startFleet(t, fleetserve.Options{TimeScale: 100, WeightsBandwidth: 2e9})
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
	// 30.5 s emulated at scale 100 is 305 ms of wall time (not a timing
	// assertion on speed: the worker may not be ready before).
	assert.GreaterOrEqual(t, ready, 290*time.Millisecond)
	fu.stop(t)
}

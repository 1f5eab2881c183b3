package served

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/scenarios"
)

type completion struct {
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Pdemu   servedInfo `json:"pdemu"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// Issue 21 row 4 against the real cluster: "hi" then an unrelated
// 2,000-token prompt under the same session id used to come back Direct
// with ~1,000 cached tokens (a session whose first prompt had no full
// block "continued" into anything). Now the second prompt is a new
// session: no KV of "hi" is counted as cached.
func TestServeShortPromptDoesNotContinueIntoAnother(t *testing.T) {
	base, stop := startServe(t, scenarios.Default, Options{TimeScale: 10})
	code, body := post(t, base, "same-id", "hi", 4)
	require.Equal(t, http.StatusOK, code, body)
	first := testkit.JSON[completion](t, body)
	code, body = post(t, base, "same-id", strings.Repeat("an unrelated question about the build system ", 180), 4)
	require.Equal(t, http.StatusOK, code, body)
	second := testkit.JSON[completion](t, body)
	assert.NotEqual(t, first.Pdemu.Session, second.Pdemu.Session)
	assert.Zero(t, second.Pdemu.Turn)
	assert.NotEqual(t, "Direct", second.Pdemu.Mode)
	assert.Zero(t, second.Usage.PromptTokensDetails.CachedTokens, "nothing of \"hi\" is in the new prompt")
	// A real continuation of "hi" is still one.
	_, err := stop()
	require.NoError(t, err)
}

// Issue 21 row 10: a fixed-body benchmark (hey, oha, vllm bench with one
// prompt) sends the same body over and over with no session hint. It
// used to become one session of 40,000 turns on one decode worker. Now
// each request is its own session (turn 0) and the router places it by
// its own rules (KVC-Router: prefix overlap with each worker's resident
// KV, then load), and the repeated prompt's KV is a prefix-cache hit.
func TestServeFixedBodyIsNotOneSession(t *testing.T) {
	for _, sc := range []string{scenarios.Default, "vanilla-pd-1p3d.hcl"} {
		t.Run(sc, func(t *testing.T) { fixedBody(t, sc) })
	}
}

func fixedBody(t *testing.T, scenario string) {
	base, stop := startServe(t, scenario, Options{TimeScale: 20})
	prompt := strings.Repeat("benchmark prompt with a fixed body ", 60)
	const n, workers = 48, 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []completion
	for w := range workers {
		wg.Go(func() {
			for range n / workers {
				code, body := post(t, base, "", prompt, 16)
				if !assert.Equal(t, http.StatusOK, code, body) {
					return
				}
				mu.Lock()
				got = append(got, testkit.JSON[completion](t, body))
				mu.Unlock()
			}
			_ = w
		})
	}
	wg.Wait()
	out, err := stop()
	require.NoError(t, err)
	sessions, workersUsed := map[string]bool{}, map[string]int{}
	cached := 0
	for _, c := range got {
		sessions[c.Pdemu.Session] = true
		workersUsed[c.Pdemu.Worker]++
		assert.Zero(t, c.Pdemu.Turn)
		cached += c.Usage.PromptTokensDetails.CachedTokens
	}
	assert.Len(t, sessions, n, "one session per request")
	assert.Positive(t, cached, "the repeated prompt hits a prefix cache")
	if scenario != scenarios.Default {
		// Vanilla P/D balances its decode workers: the sessions spread.
		assert.Len(t, workersUsed, 3, "spread over the decode workers")
	}
	// KVC-Router ranks prefix overlap before load, so identical prompts
	// stay on the worker that holds the prefix until its pool fills and
	// admission rejects (its own rule, docs/SERVE.md).
	t.Logf("%d identical requests: %d sessions, decode workers %v, %d cached prompt tokens; modes %v", n, len(sessions), workersUsed, cached, out.Summary.Modes)
}

// Issue 21 row 5: one context limit. /v1/models advertises what the
// cluster admits (the largest request a decode pool holds, below the
// model's 131,072), and a prompt over it gets vLLM's context-length error
// up front instead of failing inside the cluster.
func TestServeContextLimitIsTheClusters(t *testing.T) {
	base, stop := startServe(t, scenarios.Default, Options{TimeScale: 10})
	res, err := http.Get(base + "/v1/models")
	require.NoError(t, err)
	var models struct {
		Data []struct {
			MaxModelLen int `json:"max_model_len"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&models))
	res.Body.Close()
	require.Len(t, models.Data, 1)
	limit := models.Data[0].MaxModelLen
	spec := loadScenario(t, scenarios.Default)
	want := int(math.Floor(spec.Router.Rho * float64(spec.Decode[0].KVBudgetTokens)))
	assert.Equal(t, want, limit, "ρ·K_d of the default scenario's decode workers")
	assert.Less(t, limit, 131072)

	// Just over: refused with vLLM's message; nothing reaches the cluster.
	over := strings.Repeat("w", 4*(limit-8)) // limit−8 prompt tokens (+ template) and 16 output
	code, body := post(t, base, "big", over, 16)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "This model's maximum context length is")
	assert.Contains(t, body, `"type":"BadRequestError","param":"messages","code":400`)
	// Under it: served.
	code, body = post(t, base, "fits", strings.Repeat("w", 4*(limit/2)), 16)
	assert.Equal(t, http.StatusOK, code, body)
	out, err := stop()
	require.NoError(t, err)
	assert.Equal(t, 1, out.Summary.Requests.Total)
	assert.Zero(t, out.Summary.Requests.Failed)
}

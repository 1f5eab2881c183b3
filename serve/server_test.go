package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/promtest"
	"github.com/pdemu/pdemu/internal/testkit"
)

// start serves cl on a loopback port with the real http.Server (timeouts
// and all) and returns the server and its base URL.
func start(t testing.TB, opts Options, cl Cluster) (*Server, string) {
	t.Helper()
	opts.Listen = "127.0.0.1:0"
	s, err := New(opts, cl)
	require.NoError(t, err)
	base, done := serveOn(t, s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, s.Shutdown(ctx))
		assert.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	return s, base
}

// startGated serves a one-worker fake whose streams wait for fake.gate to
// close, for the tests that shut the server down themselves: the fake,
// the server, its base URL and Serve's result.
func startGated(t testing.TB) (*fakeCluster, *Server, string, <-chan error) {
	t.Helper()
	fake := newFake(1)
	fake.gate = make(chan struct{})
	s, err := New(Options{}, fake)
	require.NoError(t, err)
	base, served := serveOn(t, s)
	return fake, s, base, served
}

// serveOn serves s on a free loopback port: its base URL, and Serve's
// result once it returns (the caller shuts s down).
func serveOn(t testing.TB, s *Server) (string, <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	return "http://" + l.Addr().String(), done
}

func sdk(base string, opts ...option.RequestOption) *openai.Client {
	c := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(base + "/v1/"),
		option.WithAPIKey("unused"), option.WithMaxRetries(0)}, opts...)...)
	return &c
}

func TestChatNonStreaming(t *testing.T) {
	_, base := start(t, Options{}, newFake(2))
	c := sdk(base)
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse."), openai.UserMessage("Say something.")}
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "pdemu", Messages: msgs, MaxTokens: openai.Int(12)})
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	content := resp.Choices[0].Message.Content
	assert.Len(t, content, 12*BytesPerToken)
	assert.Equal(t, "length", resp.Choices[0].FinishReason)
	assert.Equal(t, "chat.completion", string(resp.Object))
	prompt := chatTemplate([]chatMessage{{"system", "You are terse."}, {"user", "Say something."}})
	assert.EqualValues(t, TokenCount(len(prompt)), resp.Usage.PromptTokens)
	assert.EqualValues(t, 12, resp.Usage.CompletionTokens)
	assert.EqualValues(t, resp.Usage.PromptTokens+12, resp.Usage.TotalTokens)
	assert.EqualValues(t, 0, resp.Usage.PromptTokensDetails.CachedTokens)
	p := testkit.JSON[pdemuInfo](t, resp.JSON.ExtraFields["pdemu"].Raw())
	assert.Equal(t, "Seed", p.Mode)
	assert.Equal(t, 0, p.Turn)

	// Without max_tokens the length comes from the default distribution:
	// deterministic for a given prompt.
	a, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("same prompt")}})
	require.NoError(t, err)
	b, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("same prompt")}})
	require.NoError(t, err)
	assert.Equal(t, a.Usage.CompletionTokens, b.Usage.CompletionTokens)
	assert.Equal(t, "stop", a.Choices[0].FinishReason)
	assert.Positive(t, a.Usage.CompletionTokens)
}

func TestChatStreaming(t *testing.T) {
	_, base := start(t, Options{}, newFake(2))
	c := sdk(base)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "pdemu", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream please")},
		MaxTokens:     openai.Int(30),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	contentChunks, usageChunks := 0, 0
	var finish string
	var info pdemuInfo
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) == 1 && ch.Choices[0].Delta.Content != "" {
			contentChunks++
		}
		if len(ch.Choices) == 1 && ch.Choices[0].FinishReason != "" {
			finish = ch.Choices[0].FinishReason
			info = testkit.JSON[pdemuInfo](t, ch.JSON.ExtraFields["pdemu"].Raw())
		}
		if len(ch.Choices) == 0 {
			usageChunks++
			assert.EqualValues(t, 30, ch.Usage.CompletionTokens)
		}
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, 30, contentChunks, "one chunk per token")
	assert.Equal(t, 1, usageChunks)
	assert.Equal(t, "length", finish)
	assert.Equal(t, "Seed", info.Mode)
	assert.Len(t, acc.Choices[0].Message.Content, 30*BytesPerToken)
	assert.EqualValues(t, 30, acc.Usage.CompletionTokens)

	// Without include_usage no usage chunk comes.
	stream = c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "pdemu", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("again")}, MaxTokens: openai.Int(3)})
	n := 0
	for stream.Next() {
		assert.NotEmpty(t, stream.Current().Choices)
		n++
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, 4, n, "3 tokens and the finish chunk")
}

// A conversation re-sent with its history keeps its blocks: the second
// turn shares every full block of the first prompt, and the fake cluster
// serves it Direct with those tokens cached.
func TestMultiTurnSession(t *testing.T) {
	fake := newFake(4)
	_, base := start(t, Options{}, fake)
	c := sdk(base, option.WithHeader("X-Session-Id", "conv-1"))
	system := strings.Repeat("You are a careful coding agent. ", 40)
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage("Fix the bug in main.go")}
	r1, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu", Messages: msgs, MaxTokens: openai.Int(40)})
	require.NoError(t, err)
	p1 := testkit.JSON[pdemuInfo](t, r1.JSON.ExtraFields["pdemu"].Raw())
	msgs = append(msgs, openai.AssistantMessage(r1.Choices[0].Message.Content), openai.UserMessage("Now run the tests"))
	r2, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu", Messages: msgs, MaxTokens: openai.Int(10)})
	require.NoError(t, err)
	p2 := testkit.JSON[pdemuInfo](t, r2.JSON.ExtraFields["pdemu"].Raw())
	assert.Equal(t, p1.Session, p2.Session)
	assert.Equal(t, 1, p2.Turn)
	assert.Equal(t, "Direct", p2.Mode)
	full := int(r1.Usage.PromptTokens) / 24 * 24
	assert.EqualValues(t, full, r2.Usage.PromptTokensDetails.CachedTokens)
	// What is new: the answer's closing tag, the new user message and the
	// generation prompt.
	assert.Equal(t, int(r2.Usage.PromptTokens-r1.Usage.PromptTokens-r1.Usage.CompletionTokens), p2.AppendLen)

	// Another session id is another session even with the same text.
	c2 := sdk(base, option.WithHeader("X-Session-Id", "conv-2"))
	r3, err := c2.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu", Messages: msgs[:2], MaxTokens: openai.Int(5)})
	require.NoError(t, err)
	p3 := testkit.JSON[pdemuInfo](t, r3.JSON.ExtraFields["pdemu"].Raw())
	assert.NotEqual(t, p1.Session, p3.Session)
	assert.Equal(t, 0, p3.Turn)

	// Without a header or user, the conversation's opening identifies it.
	c3 := sdk(base)
	o1, err := c3.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")}, MaxTokens: openai.Int(5)})
	require.NoError(t, err)
	o2, err := c3.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there"),
			openai.AssistantMessage(o1.Choices[0].Message.Content), openai.UserMessage("more")}, MaxTokens: openai.Int(5)})
	require.NoError(t, err)
	q1, q2 := testkit.JSON[pdemuInfo](t, o1.JSON.ExtraFields["pdemu"].Raw()), testkit.JSON[pdemuInfo](t, o2.JSON.ExtraFields["pdemu"].Raw())
	assert.Equal(t, q1.Session, q2.Session)
	assert.Equal(t, 1, q2.Turn)
	// The user field too.
	u1, err := c3.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu", User: openai.String("alice"),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("a")}, MaxTokens: openai.Int(2)})
	require.NoError(t, err)
	u2, err := c3.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu", User: openai.String("alice"),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("b")}, MaxTokens: openai.Int(2)})
	require.NoError(t, err)
	// ... as a hint: "b" does not extend "a", so it is a new session.
	assert.NotEqual(t, testkit.JSON[pdemuInfo](t, u1.JSON.ExtraFields["pdemu"].Raw()).Session, testkit.JSON[pdemuInfo](t, u2.JSON.ExtraFields["pdemu"].Raw()).Session)
	assert.Zero(t, testkit.JSON[pdemuInfo](t, u2.JSON.ExtraFields["pdemu"].Raw()).Turn)
	assert.Zero(t, fake.dupIDs.Load())
}

func TestCompletions(t *testing.T) {
	_, base := start(t, Options{}, newFake(1))
	c := sdk(base)
	prompt := strings.Repeat("abcd", 100)
	r, err := c.Completions.New(context.Background(), openai.CompletionNewParams{Model: "pdemu",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}, MaxTokens: openai.Int(7)})
	require.NoError(t, err)
	assert.EqualValues(t, 100, r.Usage.PromptTokens)
	assert.EqualValues(t, 7, r.Usage.CompletionTokens)
	assert.Len(t, r.Choices[0].Text, 7*BytesPerToken)

	stream := c.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{Model: "pdemu",
		Prompt:        openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: []string{prompt + "x"}},
		MaxTokens:     openai.Int(5),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var text strings.Builder
	var usage int64
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Text)
		} else {
			usage = ch.Usage.CompletionTokens
		}
	}
	require.NoError(t, stream.Err())
	assert.Len(t, text.String(), 5*BytesPerToken)
	assert.EqualValues(t, 5, usage)
}

func TestModelsAndHealth(t *testing.T) {
	_, base := start(t, Options{Model: "qwen3-coder"}, newFake(1))
	c := sdk(base)
	page, err := c.Models.List(context.Background())
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, "qwen3-coder", page.Data[0].ID)
	res, err := http.Get(base + "/health")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
}

func scrape(t *testing.T, base string) promtest.Families {
	t.Helper()
	return promtest.Scrape(t, base+"/metrics")
}

// sum adds a family's values over the series whose labels include want
// (-1: the family is missing).
var sum = promtest.Sum

func TestMetricsAgreeWithResponses(t *testing.T) {
	_, base := start(t, Options{}, newFake(2))
	c := sdk(base)
	var prompt, gen, cached, reqs int64
	var direct int
	for sess := range 3 {
		cs := sdk(base, option.WithHeader("X-Session-Id", fmt.Sprint("m", sess)))
		msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("context ", 60+sess))}
		for turn := range 3 {
			r, err := cs.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu", Messages: msgs, MaxTokens: openai.Int(int64(5 + turn))})
			require.NoError(t, err)
			prompt += r.Usage.PromptTokens
			gen += r.Usage.CompletionTokens
			cached += r.Usage.PromptTokensDetails.CachedTokens
			reqs++
			if testkit.JSON[pdemuInfo](t, r.JSON.ExtraFields["pdemu"].Raw()).Mode == "Direct" {
				direct++
			}
			msgs = append(msgs, openai.AssistantMessage(r.Choices[0].Message.Content), openai.UserMessage("next"))
		}
	}
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "nope",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
	require.Error(t, err)

	f := scrape(t, base)
	m := map[string]string{"model_name": "pdemu"}
	assert.EqualValues(t, prompt, sum(f, "vllm:prompt_tokens_total", m))
	assert.EqualValues(t, gen, sum(f, "vllm:generation_tokens_total", m))
	assert.EqualValues(t, prompt, sum(f, "vllm:prefix_cache_queries_total", m))
	assert.EqualValues(t, cached, sum(f, "vllm:prefix_cache_hits_total", m))
	assert.Positive(t, cached)
	assert.EqualValues(t, reqs, sum(f, "vllm:request_success_total", map[string]string{"finished_reason": "length"}))
	assert.EqualValues(t, reqs, sum(f, "vllm:time_to_first_token_seconds", m))
	assert.EqualValues(t, reqs, sum(f, "vllm:e2e_request_latency_seconds", m))
	assert.EqualValues(t, gen-reqs, sum(f, "vllm:inter_token_latency_seconds", m))
	assert.EqualValues(t, direct, sum(f, "pdemu_requests_total", map[string]string{"mode": "Direct"}))
	assert.EqualValues(t, 6, direct, "turns 1 and 2 of each session")
	assert.EqualValues(t, 1, sum(f, "pdemu_http_errors_total", map[string]string{"status": "404", "code": "model_not_found"}))
	// From the snapshot.
	assert.EqualValues(t, 2, len(f["vllm:num_requests_running"].GetMetric()))
	assert.InDelta(t, 0.1, sum(f, "vllm:kv_cache_usage_perc", map[string]string{"worker": "d0"}), 1e-9)
	assert.EqualValues(t, 3, sum(f, "pdemu_router_migrations_total", nil))
	assert.EqualValues(t, 12345, sum(f, "pdemu_link_bytes_total", map[string]string{"link": "p0->d0"}))
	assert.Contains(t, f, "pdemu_clock_lag_seconds")
	assert.EqualValues(t, 0, sum(f, "pdemu_http_requests_in_flight", nil))
}

type apiErrBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *int    `json:"code"` // vLLM's: the HTTP status, an integer
	} `json:"error"`
}

func TestBadRequests(t *testing.T) {
	fake := newFake(1)
	srv, base := start(t, Options{MaxBodyBytes: 64 << 10, MaxModelLen: 2000}, fake)
	long := strings.Repeat("x", 9000) // 2250 tokens > MaxModelLen
	cases := []struct {
		name, method, path, body string
		status                   int
		param, reason            string // reason: the pdemu_http_errors_total label
	}{
		{"malformed", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":[`, 400, "", "invalid_json"},
		{"not an object", "POST", "/v1/chat/completions", `[1,2]`, 400, "", "invalid_type"},
		{"empty", "POST", "/v1/chat/completions", ``, 400, "", ""},
		{"max_tokens string", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":[{"role":"user","content":"hi"}],"max_tokens":"ten"}`, 400, "max_tokens", "invalid_type"},
		{"stream string", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":[{"role":"user","content":"hi"}],"stream":"yes"}`, 400, "stream", "invalid_type"},
		{"messages object", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":{"role":"user"}}`, 400, "messages", "invalid_type"},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":[]}`, 400, "messages", ""},
		{"content number", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":[{"role":"user","content":5}]}`, 400, "messages[0].content", "invalid_type"},
		{"image part", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages[0].content", "invalid_type"},
		{"no role", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":[{"content":"hi"}]}`, 400, "messages[0].role", ""},
		{"no model", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model", ""},
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "model_not_found"},
		{"n=17", "POST", "/v1/chat/completions", `{"model":"pdemu","n":17,"messages":[{"role":"user","content":"hi"}]}`, 400, "n", "invalid_value"},
		{"tools", "POST", "/v1/chat/completions", `{"model":"pdemu","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"hi"}]}`, 400, "tools", "unsupported_parameter"},
		{"unknown parameter", "POST", "/v1/chat/completions", `{"model":"pdemu","frobnicate":1,"messages":[{"role":"user","content":"hi"}]}`, 400, "frobnicate", "unsupported_parameter"},
		{"temperature -3", "POST", "/v1/chat/completions", `{"model":"pdemu","temperature":-3,"messages":[{"role":"user","content":"hi"}]}`, 400, "temperature", "invalid_value"},
		{"top_p 7", "POST", "/v1/chat/completions", `{"model":"pdemu","top_p":7,"messages":[{"role":"user","content":"hi"}]}`, 400, "top_p", "invalid_value"},
		{"role wizard", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":[{"role":"wizard","content":"hi"}]}`, 400, "messages[0].role", "invalid_value"},
		{"tool message", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":[{"role":"tool","content":"hi"}]}`, 400, "messages[0].role", "invalid_value"},
		{"max_completion_tokens 0", "POST", "/v1/chat/completions", `{"model":"pdemu","max_completion_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, 400, "max_completion_tokens", "invalid_value"},
		{"stream_options without stream", "POST", "/v1/chat/completions", `{"model":"pdemu","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, 400, "stream_options", ""},
		{"top_logprobs without logprobs", "POST", "/v1/chat/completions", `{"model":"pdemu","top_logprobs":3,"messages":[{"role":"user","content":"hi"}]}`, 400, "top_logprobs", "invalid_value"},
		{"top_logprobs 21", "POST", "/v1/chat/completions", `{"model":"pdemu","logprobs":true,"top_logprobs":21,"messages":[{"role":"user","content":"hi"}]}`, 400, "top_logprobs", "invalid_value"},
		{"response_format json", "POST", "/v1/chat/completions", `{"model":"pdemu","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"hi"}]}`, 400, "response_format", "unsupported_parameter"},
		{"completions echo", "POST", "/v1/completions", `{"model":"pdemu","prompt":"hi","echo":true}`, 400, "echo", "unsupported_parameter"},
		{"completions logprobs 6", "POST", "/v1/completions", `{"model":"pdemu","prompt":"hi","logprobs":6}`, 400, "logprobs", "invalid_value"},
		{"stop number", "POST", "/v1/completions", `{"model":"pdemu","prompt":"hi","stop":5}`, 400, "stop", "invalid_type"},
		{"max_tokens 0", "POST", "/v1/chat/completions", `{"model":"pdemu","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, 400, "max_tokens", "invalid_value"},
		{"prompt too long", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":[{"role":"user","content":"` + long + `"}]}`, 400, "messages", "context_length_exceeded"},
		{"output too long", "POST", "/v1/completions", `{"model":"pdemu","prompt":"hi","max_tokens":5000}`, 400, "messages", "context_length_exceeded"},
		{"huge body", "POST", "/v1/chat/completions", `{"model":"pdemu","messages":[{"role":"user","content":"` + strings.Repeat("y", 100<<10) + `"}]}`, 413, "", "request_too_large"},
		{"prompt tokens", "POST", "/v1/completions", `{"model":"pdemu","prompt":[1,2,3]}`, 400, "prompt", "invalid_type"},
		{"no prompt", "POST", "/v1/completions", `{"model":"pdemu"}`, 400, "prompt", ""},
		{"empty prompt", "POST", "/v1/completions", `{"model":"pdemu","prompt":""}`, 400, "prompt", ""},
		{"GET completions", "GET", "/v1/chat/completions", ``, 405, "", "method_not_allowed"},
		{"POST models", "POST", "/v1/models", `{}`, 405, "", "method_not_allowed"},
		{"unknown path", "GET", "/v1/embeddings", ``, 404, "", "not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := testkit.Do(t, tc.method, base+tc.path, tc.body)
			defer res.Body.Close()
			assert.Equal(t, tc.status, res.StatusCode)
			assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
			var body apiErrBody
			require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
			assert.NotEmpty(t, body.Error.Message)
			// vLLM's ErrorInfo: type from the status, code the status.
			require.NotNil(t, body.Error.Code, body.Error.Message)
			assert.Equal(t, tc.status, *body.Error.Code, body.Error.Message)
			assert.Equal(t, errType(tc.status), body.Error.Type)
			if tc.param != "" {
				require.NotNil(t, body.Error.Param, body.Error.Message)
				assert.Equal(t, tc.param, *body.Error.Param, body.Error.Message)
			}
			if tc.reason != "" {
				assert.EqualValues(t, 1, testutil.ToFloat64(srv.met.httpErrors.WithLabelValues(strconv.Itoa(tc.status), tc.reason)),
					"the error counted under its reason: %s", body.Error.Message)
				srv.met.httpErrors.Reset()
			}
		})
	}
	assert.Zero(t, fake.submitted.Load(), "no bad request reached the cluster")
	// The server still serves.
	_, err := sdk(base).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("still there?")}, MaxTokens: openai.Int(3)})
	require.NoError(t, err)
}

// waitFor polls cond (a synchronisation wait, not a timing assertion).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestOverloadGets429(t *testing.T) {
	fake := newFake(1)
	fake.gate = make(chan struct{})
	s, base := start(t, Options{MaxInFlight: 2, RetryAfter: 3 * time.Second}, fake)
	c := sdk(base)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i := range 2 {
		wg.Go(func() {
			_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprint("held ", i))}, MaxTokens: openai.Int(2)})
			errs <- err
		})
	}
	waitFor(t, "two requests in flight", func() bool { return fake.submitted.Load() == 2 })
	res, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"pdemu","messages":[{"role":"user","content":"third"}]}`))
	require.NoError(t, err)
	var body apiErrBody
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	res.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	assert.Equal(t, "3", res.Header.Get("Retry-After"))
	assert.Equal(t, http.StatusTooManyRequests, *body.Error.Code)
	assert.Equal(t, "TooManyRequestsError", body.Error.Type)
	assert.Equal(t, 2, s.InFlight())
	close(fake.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.EqualValues(t, 2, fake.ended.Load())
}

// A client that goes away mid-stream: its request still runs to its end
// in the cluster and is counted; the server keeps serving.
func TestClientDisconnectMidStream(t *testing.T) {
	fake := newFake(1)
	fake.tokenDelay = time.Millisecond
	s, base := start(t, Options{}, fake)
	ctx, cancel := context.WithCancel(context.Background())
	stream := sdk(base).Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "pdemu",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("long answer")}, MaxTokens: openai.Int(400)})
	require.True(t, stream.Next())
	require.True(t, stream.Next())
	cancel()
	stream.Close()
	waitFor(t, "the abandoned request to end", func() bool { return fake.ended.Load() == 1 && s.InFlight() == 0 })
	f := scrape(t, base)
	assert.EqualValues(t, 1, sum(f, "pdemu_client_disconnects_total", nil))
	assert.EqualValues(t, 1, sum(f, "vllm:request_success_total", nil), "the abandoned request completed in the cluster")
	assert.EqualValues(t, 400, sum(f, "vllm:generation_tokens_total", nil))
	_, err := sdk(base).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("next")}, MaxTokens: openai.Int(3)})
	require.NoError(t, err)
}

// A client that sends a streaming request and never reads: the write
// deadline drops it, the request still ends, the server keeps serving.
func TestSlowClientIsDropped(t *testing.T) {
	fake := newFake(1)
	s, base := start(t, Options{WriteTimeout: 200 * time.Millisecond, MaxModelLen: 1 << 20}, fake)
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		require.NoError(t, tc.SetReadBuffer(4096))
	}
	body := `{"model":"pdemu","stream":true,"max_tokens":200000,"messages":[{"role":"user","content":"flood"}]}`
	_, err = fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	// Read the status line only, then stop reading.
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, "200")
	waitFor(t, "the stalled request to end", func() bool { return fake.ended.Load() == 1 && s.InFlight() == 0 })
	f := scrape(t, base)
	assert.EqualValues(t, 1, sum(f, "pdemu_client_disconnects_total", nil))
	assert.EqualValues(t, 200000, sum(f, "vllm:generation_tokens_total", nil))
	_, err = sdk(base).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("next")}, MaxTokens: openai.Int(3)})
	require.NoError(t, err)
}

// Shutdown drains: an in-flight stream is served to its [DONE], new
// requests get 503, and Shutdown returns once the stream ended.
func TestShutdownDrainsStreams(t *testing.T) {
	fake, s, base, served := startGated(t)
	got := make(chan string, 1)
	go func() {
		res, err := http.Post(base+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"pdemu","stream":true,"max_tokens":50,"messages":[{"role":"user","content":"drain me"}]}`))
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got <- string(b)
	}()
	waitFor(t, "the stream to be in flight", func() bool { return fake.submitted.Load() == 1 })
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	waitFor(t, "draining", func() bool { return s.draining.Load() })
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{}`)))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	close(fake.gate)
	require.NoError(t, <-shut)
	assert.ErrorIs(t, <-served, http.ErrServerClosed)
	out := <-got
	assert.Equal(t, 50, strings.Count(out, `"content":`))
	assert.True(t, strings.HasSuffix(out, "data: [DONE]\n\n"), out[max(0, len(out)-200):])
}

func TestListenIsLoopbackByDefault(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:8000": true, "[::1]:8000": true, "localhost:80": true,
		"0.0.0.0:8000": false, ":8000": false, "10.1.2.3:8000": false, "example.com:80": false} {
		err := CheckListen(addr, false)
		if ok {
			assert.NoError(t, err, addr)
		} else {
			assert.Error(t, err, addr)
			assert.NoError(t, CheckListen(addr, true), addr)
		}
	}
	_, err := New(Options{Listen: "0.0.0.0:8000"}, newFake(1))
	assert.Error(t, err)
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Listen: "127.0.0.1:0", Ready: func(a net.Addr) { addrc <- a }}, newFake(1))
	}()
	addr := <-addrc
	_, err := sdk("http://"+addr.String()).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(2)})
	require.NoError(t, err)
	cancel()
	assert.NoError(t, <-done)
	var ne net.Error
	_, err = net.Dial("tcp", addr.String())
	assert.True(t, err != nil && (errors.As(err, &ne) || strings.Contains(err.Error(), "refused")), "listener closed")
}

package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 21 row 9, through the official openai-go client: every
// parameter the server supports does what it says (docs/SERVE.md,
// Conformance, lists these checks).
func TestConformanceOpenAIGo(t *testing.T) {
	_, base := start(t, Options{}, newFake(2))
	c := sdk(base)
	ctx := context.Background()
	user := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("write something")}

	t.Run("stop cuts the emulated text", func(t *testing.T) {
		r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, MaxTokens: openai.Int(200),
			Stop: openai.ChatCompletionNewParamsStopUnion{OfString: openai.String(" the")}})
		require.NoError(t, err)
		ch := r.Choices[0]
		assert.Equal(t, "stop", string(ch.FinishReason))
		assert.NotContains(t, ch.Message.Content, " the")
		assert.Less(t, r.Usage.CompletionTokens, int64(200), "generation stopped at the stop string")
		// Without it, the same request runs to its length.
		r2, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, MaxTokens: openai.Int(200)})
		require.NoError(t, err)
		assert.Equal(t, "length", string(r2.Choices[0].FinishReason))
		assert.EqualValues(t, 200, r2.Usage.CompletionTokens)
	})
	t.Run("n > 1", func(t *testing.T) {
		r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, MaxTokens: openai.Int(5), N: openai.Int(3)})
		require.NoError(t, err)
		require.Len(t, r.Choices, 3)
		for i, ch := range r.Choices {
			assert.EqualValues(t, i, ch.Index)
			assert.Len(t, ch.Message.Content, 5*BytesPerToken)
		}
		assert.NotEqual(t, r.Choices[0].Message.Content, r.Choices[1].Message.Content, "each sequence is its own")
		assert.EqualValues(t, 15, r.Usage.CompletionTokens)
		// Streaming: chunks carry their choice's index.
		st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, MaxTokens: openai.Int(4), N: openai.Int(2)})
		per := map[int64]int{}
		finished := map[int64]bool{}
		for st.Next() {
			for _, ch := range st.Current().Choices {
				if ch.Delta.Content != "" {
					per[ch.Index]++
				}
				if ch.FinishReason != "" {
					finished[ch.Index] = true
				}
			}
		}
		require.NoError(t, st.Err())
		assert.Equal(t, map[int64]int{0: 4, 1: 4}, per)
		assert.Equal(t, map[int64]bool{0: true, 1: true}, finished)
	})
	t.Run("stream_options.include_usage", func(t *testing.T) {
		for _, include := range []bool{true, false} {
			p := openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, MaxTokens: openai.Int(3)}
			if include {
				p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			}
			st := c.Chat.Completions.NewStreaming(ctx, p)
			var usage int64
			for st.Next() {
				usage += st.Current().Usage.CompletionTokens
			}
			require.NoError(t, st.Err())
			if include {
				assert.EqualValues(t, 3, usage)
			} else {
				assert.Zero(t, usage)
			}
		}
	})
	t.Run("max_completion_tokens", func(t *testing.T) {
		r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, MaxCompletionTokens: openai.Int(7)})
		require.NoError(t, err)
		assert.EqualValues(t, 7, r.Usage.CompletionTokens)
		_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, MaxCompletionTokens: openai.Int(0)})
		var ae *openai.Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, 400, ae.StatusCode)
		assert.Equal(t, "max_completion_tokens", ae.Param, "the error names the parameter sent")
	})
	t.Run("logprobs and top_logprobs", func(t *testing.T) {
		r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, MaxTokens: openai.Int(6),
			Logprobs: openai.Bool(true), TopLogprobs: openai.Int(3)})
		require.NoError(t, err)
		lp := r.Choices[0].Logprobs.Content
		require.Len(t, lp, 6)
		var text strings.Builder
		for _, tok := range lp {
			text.WriteString(tok.Token)
			assert.LessOrEqual(t, tok.Logprob, 0.0)
			require.Len(t, tok.TopLogprobs, 3)
			assert.Equal(t, tok.Token, tok.TopLogprobs[0].Token, "the chosen token is the most likely")
			for k := 1; k < 3; k++ {
				assert.Less(t, tok.TopLogprobs[k].Logprob, tok.TopLogprobs[k-1].Logprob)
			}
			assert.Len(t, tok.Bytes, len(tok.Token))
		}
		assert.Equal(t, r.Choices[0].Message.Content, text.String(), "the logprobs' tokens are the text")
	})
	t.Run("completions", func(t *testing.T) {
		r, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "pdemu", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("once upon")},
			MaxTokens: openai.Int(4), Logprobs: openai.Int(2), N: openai.Int(2)})
		require.NoError(t, err)
		require.Len(t, r.Choices, 2)
		assert.Len(t, r.Choices[0].Logprobs.Tokens, 4)
		assert.Len(t, r.Choices[0].Logprobs.TopLogprobs[0], 2)
		assert.Equal(t, "text_completion", string(r.Object))
	})
	t.Run("refused parameters are named", func(t *testing.T) {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user,
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "f"})}})
		var ae *openai.Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, 400, ae.StatusCode)
		assert.Equal(t, "tools", ae.Param)
		_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, Temperature: openai.Float(-3)})
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "temperature", ae.Param)
		// In range, a sampling parameter is a documented no-op.
		_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, MaxTokens: openai.Int(2),
			Temperature: openai.Float(0.7), TopP: openai.Float(0.9), Seed: openai.Int(1), PresencePenalty: openai.Float(0.5)})
		require.NoError(t, err)
	})
	t.Run("ids, created, X-Request-Id", func(t *testing.T) {
		var hdr http.Header
		r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, MaxTokens: openai.Int(1)},
			option.WithHeader("X-Request-Id", "trace-42"), option.WithResponseInto(new(*http.Response)), option.WithMiddleware(
				func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
					res, err := next(req)
					if res != nil {
						hdr = res.Header
					}
					return res, err
				}))
		require.NoError(t, err)
		assert.Equal(t, "trace-42", hdr.Get("X-Request-Id"), "echoed")
		assert.Equal(t, "chatcmpl-trace-42", r.ID)
		assert.InDelta(t, time.Now().Unix(), r.Created, 5, "created is the response's time")
		r2, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "pdemu", Messages: user, MaxTokens: openai.Int(1)})
		require.NoError(t, err)
		assert.NotEqual(t, r.ID, r2.ID)
		assert.Contains(t, r2.ID, "chatcmpl-pdemu-", "generated: the launch's random salt and a sequence number")
	})
}

// Ids are unique across launches: two servers never hand out the same.
func TestIDsAreUniqueAcrossLaunches(t *testing.T) {
	a, err := New(Options{}, newFake(1))
	require.NoError(t, err)
	b, err := New(Options{}, newFake(1))
	require.NoError(t, err)
	assert.NotEqual(t, a.newID(), b.newID())
}

// /v1/models/{id}, /health/ready, /tokenize and /detokenize (vLLM's
// shapes; token ids round-trip).
func TestVLLMEndpoints(t *testing.T) {
	_, base := start(t, Options{MaxModelLen: 4096}, newFake(1))
	get := func(path string) (int, map[string]any) {
		res, err := http.Get(base + path)
		require.NoError(t, err)
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m
	}
	code, m := get("/v1/models/pdemu")
	assert.Equal(t, 200, code)
	assert.Equal(t, "pdemu", m["id"])
	assert.EqualValues(t, 4096, m["max_model_len"])
	code, _ = get("/v1/models/other")
	assert.Equal(t, 404, code)
	code, _ = get("/health/ready")
	assert.Equal(t, 200, code)

	post := func(path, body string) map[string]any {
		res, err := http.Post(base+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		require.Equal(t, 200, res.StatusCode, string(b))
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	text := "The quick brown fox jumps over the lazy dog!"
	tok := post("/tokenize", `{"model":"pdemu","prompt":"`+text+`"}`)
	assert.EqualValues(t, TokenCount(len(text)), tok["count"])
	assert.EqualValues(t, 4096, tok["max_model_len"])
	// Decode the ids as integers (they exceed float64's exact range).
	var raw struct {
		Tokens []int64 `json:"tokens"`
	}
	res, err := http.Post(base+"/tokenize", "application/json", strings.NewReader(`{"model":"pdemu","prompt":"`+text+`"}`))
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&raw))
	res.Body.Close()
	idsJSON, _ := json.Marshal(raw.Tokens)
	back := post("/detokenize", `{"model":"pdemu","tokens":`+string(idsJSON)+`}`)
	assert.Equal(t, text, back["prompt"])
	chat := post("/tokenize", `{"model":"pdemu","messages":[{"role":"user","content":"hi"}]}`)
	assert.EqualValues(t, TokenCount(len(chatTemplate([]chatMessage{{"user", "hi"}}))), chat["count"], "the chat template counts, as in a completion's usage")
}

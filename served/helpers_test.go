package served

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/topology"
)

// loadScenario parses an embedded scenario with the default options.
func loadScenario(t testing.TB, name string) *topology.Spec {
	t.Helper()
	return testkit.Scenario(t, name, topology.Options{})
}

// post sends one non-streaming chat completion of one user message and
// returns its status and body.
func post(t *testing.T, base, session, content string, maxTokens int) (int, string) {
	t.Helper()
	return postMessages(t, base, session, maxTokens, [2]string{"user", content})
}

// postMessages sends one non-streaming chat completion of msgs (role,
// content pairs) under session ("" sends no X-Session-Id) and returns its
// status and body.
func postMessages(t *testing.T, base, session string, maxTokens int, msgs ...[2]string) (int, string) {
	t.Helper()
	var ms []string
	for _, m := range msgs {
		ms = append(ms, fmt.Sprintf(`{"role":%q,"content":%q}`, m[0], m[1]))
	}
	body := fmt.Sprintf(`{"model":"qwen3-coder-30b-a3b","max_tokens":%d,"messages":[%s]}`, maxTokens, strings.Join(ms, ","))
	res := testkit.Do(t, "POST", base+"/v1/chat/completions", body, "X-Session-Id", session)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// streamed is what a streamed chat completion carried: its content
// chunks, the pdemu field of its finishing chunk, and the usage of its
// last (choice-less) chunk when the request asked for it.
type streamed struct {
	tokens int
	info   servedInfo
	usage  openai.CompletionUsage
}

// readStream reads stream to its end; a stream error fails the test.
func readStream(t *testing.T, stream *ssestream.Stream[openai.ChatCompletionChunk]) streamed {
	t.Helper()
	var s streamed
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			s.tokens++
		}
		if len(ch.Choices) > 0 && ch.Choices[0].FinishReason != "" {
			require.NoError(t, json.Unmarshal([]byte(ch.JSON.ExtraFields["pdemu"].Raw()), &s.info))
		}
		if len(ch.Choices) == 0 {
			s.usage = ch.Usage
		}
	}
	require.NoError(t, stream.Err())
	return s
}

// readSSE reads a chat completion stream's lines to the end into r: its
// content chunks, its data: [DONE], an error event; the scanner's error.
func readSSE(sc *bufio.Scanner, r *reply) error {
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "data: [DONE]":
			r.done = true
		case strings.HasPrefix(line, `data: {"error"`):
			r.errEvent = true
		case strings.Contains(line, `"content":"`):
			r.tokens++
		}
	}
	return sc.Err()
}

// ended is how a served run ended: its result and Serve's error.
type ended struct {
	res *Result
	err error
}

// stopAsync calls stop on its own goroutine (the test goes on reading
// its streams meanwhile) and delivers the run's end on the channel.
func stopAsync(stop func() (*Result, error)) <-chan ended {
	c := make(chan ended, 1)
	go func() {
		r, err := stop()
		c <- ended{r, err}
	}()
	return c
}

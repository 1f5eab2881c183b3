package served

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
)

// chat posts messages (role, content pairs) under a session and returns
// the response's usage.
func chat(t *testing.T, base, session string, maxTokens int, msgs ...[2]string) (prompt, cached int, content string) {
	t.Helper()
	code, b := postMessages(t, base, session, maxTokens, msgs...)
	require.Equal(t, http.StatusOK, code, b)
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			Prompt  int `json:"prompt_tokens"`
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(b), &out))
	return out.Usage.Prompt, out.Usage.Details.Cached, out.Choices[0].Message.Content
}

// A client that does not send the previous answer back as it was given
// (here replaced by "ok") reuses only the previous prompt's KV: the
// answer's KV is not counted as cached (it used to be: 298 of 299 prompt
// tokens reported cached, the whole resident prompt and output). A client
// that sends the answer back reuses it.
func TestReplacedAnswerIsNotCached(t *testing.T) {
	base, stop := startServe(t, scenarios.Default, Options{TimeScale: 200})
	long := strings.Repeat("lorem ipsum dolor sit amet ", 40)

	p1, _, _ := chat(t, base, "q", 200, [2]string{"user", long})
	p2, cached, _ := chat(t, base, "q", 20, [2]string{"user", long}, [2]string{"assistant", "ok"}, [2]string{"user", "next"})
	assert.LessOrEqual(t, cached, p1, "replaced answer: at most the previous prompt (%d tokens) is cached, got %d of %d", p1, cached, p2)

	q1, _, answer := chat(t, base, "r", 200, [2]string{"user", long})
	q2, kept, _ := chat(t, base, "r", 20, [2]string{"user", long}, [2]string{"assistant", answer}, [2]string{"user", "next"})
	assert.Greater(t, kept, q1, "answer sent back: its KV is reused too (prompt %d, cached %d of %d)", q1, kept, q2)

	_, err := stop()
	require.NoError(t, err)
}

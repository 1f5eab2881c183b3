package serve

import (
	"strings"
	"testing"

	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every response has an X-Request-Id, errors included (found by the
// OpenAI Node SDK: an error's requestID was null, the header was set only
// once a request reached the cluster): echoed when the client sent one,
// else generated, distinct per request.
func TestRequestIDOnEveryResponse(t *testing.T) {
	_, base := start(t, Options{}, newFake(1))
	seen := map[string]bool{}
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
	}{
		{"completion", "POST", "/v1/chat/completions", `{"model":"pdemu","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, 200},
		{"bad parameter", "POST", "/v1/chat/completions", `{"model":"pdemu","temperature":9,"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"malformed JSON", "POST", "/v1/completions", `{`, 400},
		{"wrong method", "GET", "/v1/chat/completions", ``, 405},
		{"models", "GET", "/v1/models", ``, 200},
		{"health", "GET", "/health", ``, 200},
		{"metrics", "GET", "/metrics", ``, 200},
		{"no such endpoint", "POST", "/v1/embeddings", `{}`, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, echo := range []string{"", "client-" + strings.ReplaceAll(tc.name, " ", "-")} {
				res := testkit.Do(t, tc.method, base+tc.path, tc.body, "X-Request-Id", echo)
				res.Body.Close()
				assert.Equal(t, tc.status, res.StatusCode)
				id := res.Header.Get("X-Request-Id")
				if echo != "" {
					assert.Equal(t, echo, id, "echoed")
					continue
				}
				require.NotEmpty(t, id, "generated")
				assert.False(t, seen[id], "generated ids are distinct: %s twice", id)
				seen[id] = true
			}
		})
	}
}

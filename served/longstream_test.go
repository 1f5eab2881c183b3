package served

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// longBody is a streaming chat request that outlasts a test (3,000 output
// tokens at TimeScale 1).
const longBody = `{"model":"qwen3-coder-30b-a3b","stream":true,"max_tokens":3000,"messages":[{"role":"user","content":"a very long answer"}]}`

// longStream posts longBody and returns its response once the first chunk
// arrived, so the request is in flight when the test stops the server.
// The caller closes the body.
func longStream(t *testing.T, base string) *http.Response {
	t.Helper()
	res, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(longBody))
	require.NoError(t, err)
	sc := bufio.NewScanner(res.Body)
	require.True(t, sc.Scan(), "first chunk")
	return res
}

package serve

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request a fault lost (its retries spent) fails as a real fleet's
// would: 503 with Retry-After before the stream started, an error event
// then [DONE] after.
func TestFaultFailureIs503OrErrorEvent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		stream     bool
		faultAfter int
	}{
		{"before the first token", false, 1},
		{"before the first token, streaming", true, 1},
		{"mid-stream", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(2)
			f.faultAfter = tc.faultAfter
			_, base := start(t, Options{}, f)
			body := `{"model":"pdemu","max_tokens":8,"messages":[{"role":"user","content":"hello there"}]`
			if tc.stream {
				body += `,"stream":true`
			}
			res, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body+"}"))
			require.NoError(t, err)
			defer res.Body.Close()
			if tc.faultAfter > 1 {
				require.Equal(t, http.StatusOK, res.StatusCode)
				sc := bufio.NewScanner(res.Body)
				var lines []string
				for sc.Scan() {
					if l := sc.Text(); l != "" {
						lines = append(lines, l)
					}
				}
				require.Len(t, lines, tc.faultAfter+1, "tokens, the error event, [DONE]: %q", lines)
				assert.Contains(t, lines[len(lines)-2], `"type":"ServiceUnavailableError","param":null,"code":503`)
				assert.Equal(t, "data: [DONE]", lines[len(lines)-1])
				return
			}
			b, _ := io.ReadAll(res.Body)
			assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode, string(b))
			assert.Equal(t, "1", res.Header.Get("Retry-After"))
			assert.Contains(t, string(b), `"type":"ServiceUnavailableError","param":null,"code":503`)
			assert.Contains(t, string(b), "crash d1")
			assert.EqualValues(t, 1, f.ended.Load())
		})
	}
}

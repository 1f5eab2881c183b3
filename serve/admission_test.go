package serve

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/metrics"
)

// slowReporter is a fake cluster whose client reports take a while: the
// handler goes on after the response's last byte was written (as it
// does, for less long, reporting client times, metrics and records).
type slowReporter struct {
	*fakeCluster
	delay time.Duration
}

func (s slowReporter) Client(int64, metrics.ClientTimes) { time.Sleep(s.delay) }
func (s slowReporter) TimeScale() float64                { return 1 }

// Issue 21 (the soak's non-200 answers): a client that holds at most
// --max-in-flight requests, and sends its next one as soon as it has
// read the previous answer, is never refused. The admission slot is
// released when the response's last byte is written, not when the
// handler returns: a stream's client has its data: [DONE] (and an SDK
// moves on) while the handler still finishes its bookkeeping, and used to
// get 429 rate_limit_exceeded for a request that was, for it, the only
// one in flight.
func TestAdmissionSlotFreedWithTheAnswer(t *testing.T) {
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "stream", false: "not streamed"}[stream]
		t.Run(name, func(t *testing.T) {
			s, base := start(t, Options{MaxInFlight: 1}, slowReporter{newFake(1), 100 * time.Millisecond})
			body := `{"model":"pdemu","max_tokens":2,"messages":[{"role":"user","content":"one at a time"}]}`
			if stream {
				body = strings.Replace(body, `"max_tokens"`, `"stream":true,"max_tokens"`, 1)
			}
			for i := range 3 {
				req, err := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				req.Close = true // a new connection each time, as a client that moves on at [DONE]
				res, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				if !assert.Equal(t, http.StatusOK, res.StatusCode, "request %d", i) {
					b, _ := io.ReadAll(res.Body)
					t.Logf("%s", b)
				}
				if stream {
					// Read to data: [DONE], then move on without waiting
					// for the end of the body (as SDKs do).
					sc := bufio.NewScanner(res.Body)
					for sc.Scan() && sc.Text() != "data: [DONE]" {
					}
				} else {
					_, _ = io.ReadAll(res.Body)
				}
				res.Body.Close()
			}
			// The handlers are done in the end: nothing stays admitted.
			assert.Eventually(t, func() bool { return s.InFlight() == 0 && s.active.Load() == 0 }, 5*time.Second, 10*time.Millisecond)
		})
	}
}

package served

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reply is what one client saw of one streaming request.
type reply struct {
	status     int
	retryAfter string
	tokens     int
	done       bool // data: [DONE]
	errEvent   bool // an error event in the stream
}

func streamChat(hc *http.Client, base, session, content string, maxTokens int) (reply, error) {
	body := fmt.Sprintf(`{"model":"qwen3-coder-30b-a3b","stream":true,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, maxTokens, content)
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", session)
	res, err := hc.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	r := reply{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After")}
	err = readSSE(bufio.NewScanner(res.Body), &r)
	return r, err
}

// Issue 21 row 1: a scenario's faults fire under serve as under run.
// chaos.hcl crashes d1 at 30 s (and chaos crashes and cuts more); clients
// stream multi-turn conversations through it. Every fault fires and is
// detected, the crashed workers' actors are restarted (Restarts) and
// their resident KV is lost, the requests a fault lost (how many depends
// on what was in flight at that instant) are retried or failed, and
// every request ends exactly once: each client got either all its tokens and [DONE], an
// error event in its stream, or a 503 with Retry-After; the run's
// records count every request submitted.
func TestServeFaultsFireMidStream(t *testing.T) {
	spec := loadScenario(t, "chaos.hcl")
	base, stop := startServeSpec(t, spec, Options{TimeScale: 40})
	const clients, tokens = 12, 300
	hc := &http.Client{Timeout: time.Minute}
	var mu sync.Mutex
	var replies []reply
	var errs []error
	var wg sync.WaitGroup
	deadline := time.Now().Add(1700 * time.Millisecond) // ~68 s emulated: past d1's crash and restart
	for c := range clients {
		wg.Go(func() {
			history := fmt.Sprintf("client %d: %s", c, strings.Repeat("repository context ", 80))
			for turn := 0; time.Now().Before(deadline); turn++ {
				history += fmt.Sprintf(" turn %d: do the next step.", turn)
				r, err := streamChat(hc, base, fmt.Sprint("chaos-", c), history, tokens)
				mu.Lock()
				replies = append(replies, r)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	out, err := stop()
	require.NoError(t, err)
	require.Empty(t, errs)
	var complete, errEvents, unavailable int
	for _, r := range replies {
		switch {
		case r.status == http.StatusOK && r.done && r.tokens == tokens && !r.errEvent:
			complete++
		case r.status == http.StatusOK && r.done && r.errEvent:
			errEvents++
		case r.status == http.StatusServiceUnavailable && r.retryAfter != "":
			unavailable++
		default:
			t.Errorf("a reply neither complete nor a clean failure: %+v", r)
		}
	}
	sum := out.Summary
	assert.Equal(t, len(replies), sum.Requests.Total, "every request submitted ended in the run")
	assert.Equal(t, sum.Requests.Total, sum.Requests.Completed+sum.Requests.Failed)
	assert.Equal(t, sum.Requests.Failed, errEvents+unavailable, "each failed request was told so")
	assert.Positive(t, out.Restarts["d1"], "d1's crash restarted its actor: %v", out.Restarts)
	var retried, lost, lostSessions int
	for _, f := range out.Faults {
		retried += f.Retried
		lost += f.Lost
		lostSessions += f.LostSessions
		if f.At < 60*time.Second {
			assert.GreaterOrEqual(t, f.Detected, f.At, "fault %d (%s %s) fired and was detected", f.ID, f.Kind, f.Node)
		}
		// Every request a fault lost was retried or failed, never dropped.
		assert.GreaterOrEqual(t, f.Retried+f.Failed, f.Lost, "fault %d", f.ID)
	}
	assert.Positive(t, lostSessions, "the crashes destroyed resident KV: %+v", out.Faults)
	t.Logf("%d requests: %d complete, %d error events, %d 503; faults %d, lost %d, retried %d; restarts %v",
		len(replies), complete, errEvents, unavailable, len(out.Faults), lost, retried, out.Restarts)
}

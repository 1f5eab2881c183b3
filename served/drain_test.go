package served

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/scenarios"
)

// Issue 21 row 7: while the server drains, /health and new requests get
// 503 with Retry-After; a second signal (Options.Cut, what pdemu serve
// does on a second SIGINT) stops waiting for the long stream in flight:
// Serve returns at once with the run's result, partial, stopped by
// SIGINT, the unfinished request listed, so the outputs can be written.
func TestServeSecondSignalCutsTheDrain(t *testing.T) {
	cut, cutNow := context.WithCancelCause(context.Background())
	defer cutNow(nil)
	base, stop := startServe(t, scenarios.Default, Options{TimeScale: 1, Cut: cut})
	res := longStream(t, base)
	defer res.Body.Close()

	stopped := stopAsync(stop) // the first signal: drain
	require.Eventually(t, func() bool {
		r, err := http.Get(base + "/health")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusServiceUnavailable && r.Header.Get("Retry-After") != ""
	}, 5*time.Second, 10*time.Millisecond, "/health is 503 with Retry-After while draining")
	r, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(longBody))
	require.NoError(t, err, "the listener is still open while draining")
	r.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, r.StatusCode)

	start := time.Now()
	cutNow(actors.StopCause("SIGINT")) // the second signal
	var o ended
	select {
	case o = <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the cut drain did not return")
	}
	t.Logf("the cut drain returned in %v", time.Since(start).Round(time.Millisecond))
	rest, _ := io.ReadAll(res.Body)
	assert.Contains(t, string(rest), `"error"`, "the open stream ends with an error event")
	var pe *actors.PartialError
	require.True(t, errors.As(o.err, &pe), "a partial run: %v", o.err)
	assert.Equal(t, "SIGINT", pe.StoppedBy)
	require.NotNil(t, o.res.Result)
	assert.True(t, o.res.Partial)
	assert.True(t, o.res.Summary.Partial)
	assert.Equal(t, "SIGINT", o.res.Summary.StoppedBy)
	require.Len(t, o.res.Unfinished, 1)
	assert.Equal(t, metrics.StateUnfinished, o.res.Unfinished[0].State)
}

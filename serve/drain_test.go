package serve

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 21 row 7: while it drains, the server keeps listening and
// answers /health, /health/ready and new requests with 503 and
// Retry-After over the network (they used to get connection refused),
// until the last stream in flight ended.
func TestDrainAnswers503OverTheNetwork(t *testing.T) {
	fake, s, base, served := startGated(t)
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		res, err := http.Post(base+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"pdemu","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"drain me"}]}`))
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
	waitFor(t, "the stream to be in flight", func() bool { return fake.submitted.Load() == 1 })
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	waitFor(t, "draining", func() bool { return s.draining.Load() })
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/health", ""},
		{"GET", "/health/ready", ""},
		{"POST", "/v1/chat/completions", `{"model":"pdemu","messages":[{"role":"user","content":"late"}]}`},
		{"POST", "/v1/completions", `{"model":"pdemu","prompt":"late"}`},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		res, err := hc.Do(req)
		require.NoError(t, err, "%s %s while draining", tc.method, tc.path)
		res.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode, tc.path)
		assert.NotEmpty(t, res.Header.Get("Retry-After"), tc.path)
	}
	close(fake.gate)
	<-streamDone
	require.NoError(t, <-shut)
	assert.ErrorIs(t, <-served, http.ErrServerClosed)
	assert.EqualValues(t, 1, fake.submitted.Load(), "nothing new reached the cluster")
}

// Issue 21 row 8: clients that stall mid-body no longer hold admission
// slots: the body is read before admission and within ReadTimeout, so
// with MaxInFlight 2 and four stalled bodies a normal request is served,
// and the stalled ones get 408 once ReadTimeout passes.
func TestStalledBodiesDoNotBlockAdmission(t *testing.T) {
	fake := newFake(1)
	_, base := start(t, Options{MaxInFlight: 2, ReadTimeout: 300 * time.Millisecond}, fake)
	addr := strings.TrimPrefix(base, "http://")
	var wg sync.WaitGroup
	statuses := make([]string, 4)
	for i := range statuses {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				statuses[i] = err.Error()
				return
			}
			defer c.Close()
			// Headers announce 100 bytes; 10 are sent, then nothing.
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":")
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b, _ := io.ReadAll(c)
			statuses[i], _, _ = strings.Cut(string(b), "\r\n")
		})
	}
	time.Sleep(50 * time.Millisecond) // the stalled bodies are being read
	res, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"pdemu","max_tokens":3,"messages":[{"role":"user","content":"not stalled"}]}`))
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode, "admitted beside four stalled bodies")
	wg.Wait()
	for _, st := range statuses {
		assert.Equal(t, "HTTP/1.1 408 Request Timeout", st)
	}
}

// Content-Type is checked as vLLM's front end checks it: JSON (or none)
// is parsed, anything else is 415.
func TestContentTypeIsChecked(t *testing.T) {
	_, base := start(t, Options{}, newFake(1))
	body := `{"model":"pdemu","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`
	for ct, want := range map[string]int{
		"": 200, "application/json": 200, "application/json; charset=utf-8": 200, "application/merge+json": 200,
		"text/plain": 415, "application/x-www-form-urlencoded": 415, "multipart/form-data; boundary=x": 415, "nonsense;;": 415,
	} {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.Equal(t, want, res.StatusCode, "Content-Type %q: %s", ct, b)
	}
}

package serve

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadClients is the number of concurrent streaming clients of the load
// test: PDEMU_SERVE_LOAD_CLIENTS, default 200 (CI size). Run the full size
// with PDEMU_SERVE_LOAD_CLIENTS=1000 go test ./serve -run Load -v.
func loadClients(t testing.TB) int {
	if v := os.Getenv("PDEMU_SERVE_LOAD_CLIENTS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "PDEMU_SERVE_LOAD_CLIENTS")
		require.Positive(t, n)
		require.LessOrEqual(t, n, 20000, "bounded: at most 20000 clients")
		return n
	}
	if testing.Short() {
		return 50
	}
	return 200
}

// LoadResult is what a load run saw on the client side.
type LoadResult struct {
	Clients   int
	Completed int           // streams that ended with [DONE] and every token
	Tokens    int64         // content chunks received
	Wall      time.Duration // wall time of the whole run
	Errors    []string      // up to 10 client-side errors
}

// streamLoad opens n concurrent streaming chat requests of `tokens` tokens
// each against base (loopback), each in its own session, and reads them to
// the end. Bounded: every request has a deadline of `limit`.
func streamLoad(t testing.TB, base string, n, tokens int, limit time.Duration) LoadResult {
	t.Helper()
	tr := &http.Transport{MaxIdleConns: n, MaxIdleConnsPerHost: n, MaxConnsPerHost: 0, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var res LoadResult
	res.Clients = n
	var mu sync.Mutex
	var completed atomic.Int64
	var chunks atomic.Int64
	fail := func(format string, a ...any) {
		mu.Lock()
		if len(res.Errors) < 10 {
			res.Errors = append(res.Errors, fmt.Sprintf(format, a...))
		}
		mu.Unlock()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"pdemu","stream":true,"max_tokens":%d,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"load client %d %s"}]}`,
				tokens, i, strings.Repeat("word ", 200))
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Session-Id", fmt.Sprint("load-", i))
			resp, err := hc.Do(req)
			if err != nil {
				fail("client %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				fail("client %d: status %d", i, resp.StatusCode)
				return
			}
			sc := bufio.NewScanner(resp.Body)
			got, done := 0, false
			for sc.Scan() {
				line := sc.Text()
				switch {
				case line == "data: [DONE]":
					done = true
				case strings.Contains(line, `"content":"`):
					got++
				}
			}
			chunks.Add(int64(got))
			if err := sc.Err(); err != nil || !done || got != tokens {
				fail("client %d: %d/%d tokens, done=%v, err=%v", i, got, tokens, done, err)
				return
			}
			completed.Add(1)
		})
	}
	wg.Wait()
	res.Wall = time.Since(start)
	res.Completed = int(completed.Load())
	res.Tokens = chunks.Load()
	return res
}

// Many concurrent streaming clients: all held in flight at once (the fake
// cluster releases them only when every one was submitted), none lost.
func TestLoadConcurrentStreams(t *testing.T) {
	n := loadClients(t)
	fake := newFake(8)
	fake.gate = make(chan struct{})
	fake.tokenDelay = time.Millisecond
	s, base := start(t, Options{MaxInFlight: n}, fake)
	go func() {
		deadline := time.Now().Add(2 * time.Minute)
		for fake.submitted.Load() < int64(n) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		close(fake.gate)
	}()
	res := streamLoad(t, base, n, 20, 3*time.Minute)
	t.Logf("%d concurrent streaming clients: %d completed, %d token chunks, wall %v", res.Clients, res.Completed, res.Tokens, res.Wall)
	assert.Empty(t, res.Errors)
	assert.Equal(t, n, res.Completed)
	assert.EqualValues(t, n, fake.submitted.Load())
	assert.EqualValues(t, n, fake.ended.Load())
	assert.Zero(t, s.InFlight())
	f := scrape(t, base)
	assert.EqualValues(t, n, sum(f, "vllm:request_success_total", nil))
	assert.EqualValues(t, n*20, sum(f, "vllm:generation_tokens_total", nil))
	assert.EqualValues(t, 0, sum(f, "pdemu_client_disconnects_total", nil))
}

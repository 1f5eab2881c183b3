package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// pdemu serve end to end through the CLI: it serves a chat completion on
// loopback, drains when its context is cancelled (what SIGINT does), and
// writes the run's outputs with the request in them.
func TestServeCommand(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	dir := filepath.Join(t.TempDir(), "served")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", addr, "--out", dir, "--time-scale", "20"}, &stdout, &stderr)
	}()

	url := "http://" + addr
	require.Eventually(t, func() bool {
		r, err := http.Get(url + "/health")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}, 20*time.Second, 20*time.Millisecond, "server never became healthy: %s", stderr.String())

	body := `{"model":"pdemu","messages":[{"role":"user","content":"hello there, emulator"}],"max_tokens":5}`
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	var got struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 5, got.Usage.CompletionTokens)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not drain and stop")
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var sum struct {
		Requests struct{ Total, Completed int } `json:"requests"`
		Partial  bool                           `json:"partial"`
	}
	require.NoError(t, json.Unmarshal(b, &sum))
	assert.Equal(t, 1, sum.Requests.Total)
	assert.Equal(t, 1, sum.Requests.Completed)
	assert.False(t, sum.Partial)
	assert.Contains(t, stderr.String(), "served 1 requests")
}

// Issue 21 row 12: a refused bind exits 2 (as run's --metrics-listen) and
// names --allow-remote.
func TestServeRefusesRemoteListen(t *testing.T) {
	var stdout, stderr syncBuffer
	err := run(context.Background(), []string{"serve", "--listen", "0.0.0.0:0", "--out", t.TempDir()}, &stdout, &stderr)
	require.Error(t, err)
	assert.Equal(t, exitBadInput, exitCodeOf(err))
	assert.Contains(t, err.Error(), "--allow-remote")
}

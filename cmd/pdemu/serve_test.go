package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pdemu serve end to end through the CLI: it serves a chat completion on
// loopback, drains when its context is cancelled (what SIGINT does), and
// writes the run's outputs with the request in them.
func TestServeCommand(t *testing.T) {
	addr := freeAddr(t)
	dir := filepath.Join(t.TempDir(), "served")
	r := startCLI(t, "serve", "--listen", addr, "--out", dir, "--time-scale", "20")
	url := "http://" + addr
	waitHealthy(t, url, r)

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

	r.cancel()
	require.NoError(t, r.wait(t, 30*time.Second, "serve's drain"), r.stderr.String())
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
	assert.Contains(t, r.stderr.String(), "served 1 requests")
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

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQAServeEndpointsWorkersMaxFailed: --endpoints workers honours
// --max-failed as serve's cluster mode does (docs/SERVE.md): a drain after
// a failed hand-off (unknown remote engine) exits 3; it exited 0.
func TestQAServeEndpointsWorkersMaxFailed(t *testing.T) {
	f := startFleet(t)
	out, l, stderr, done, cancel := f.out, f.listing, f.stderr, f.done, f.cancel
	defer cancel()
	var d0 string
	for _, w := range l.Workers {
		if w.Worker == "d0" {
			d0 = w.URL
		}
	}
	require.NotEmpty(t, d0)
	body := `{"model":"pdemu","max_tokens":4,"messages":[{"role":"user","content":"x"}],` +
		`"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"nosuch","remote_block_ids":[0],"remote_host":"127.0.0.1","remote_port":1}}`
	resp, err := http.Post(d0+"/v1/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	cancel()
	select {
	case err := <-done:
		require.Error(t, err, stderr.String())
		assert.Equal(t, 3, exitCode(err), "%v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no drain in 30 s")
	}
	_, err = os.Stat(filepath.Join(out, "summary.json"))
	assert.NoError(t, err, "the outputs are written before the exit code")
}

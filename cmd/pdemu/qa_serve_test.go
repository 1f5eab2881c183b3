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
	d0 := f.urls()["d0"]
	require.NotEmpty(t, d0)
	body := `{"model":"pdemu","max_tokens":4,"messages":[{"role":"user","content":"x"}],` +
		`"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"nosuch","remote_block_ids":[0],"remote_host":"127.0.0.1","remote_port":1}}`
	resp, err := http.Post(d0+"/v1/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	f.cancel()
	err = f.wait(t, 30*time.Second, "the drain")
	require.Error(t, err, f.stderr.String())
	assert.Equal(t, 3, exitCode(err), "%v", err)
	_, err = os.Stat(filepath.Join(f.out, "summary.json"))
	assert.NoError(t, err, "the outputs are written before the exit code")
}

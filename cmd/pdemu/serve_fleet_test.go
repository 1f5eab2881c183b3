package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/fleetserve"
)

// pdemu serve --endpoints workers: four endpoints for 1p3d-mlx5, listed in
// --endpoints-file; a hand-off through kv_transfer_params; the outputs
// after the drain have one row per call, with the worker and how the KV
// arrived.
func TestServeEndpointsWorkers(t *testing.T) {
	f := startFleet(t)
	urls := f.urls()
	for _, w := range f.listing.Workers {
		assert.Contains(t, f.stderr.String(), w.URL+"/v1", "the listing is printed")
		assert.True(t, strings.HasPrefix(w.KVEvents, "tcp://127.0.0.1:"))
	}
	require.Contains(t, urls, "p0")

	msgs := `"messages":[{"role":"user","content":"` + strings.Repeat("explain the failing test. ", 20) + `"}]`
	post := func(url, body string) (int, map[string]json.RawMessage) {
		resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &m), "%s", b)
		return resp.StatusCode, m
	}
	code, p := post(urls["p0"], `{"model":"pdemu","max_tokens":1,`+msgs+`,"kv_transfer_params":{"do_remote_decode":true}}`)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, p, "kv_transfer_params")
	code, d := post(urls["d1"], `{"model":"pdemu","max_tokens":8,`+msgs+`,"kv_transfer_params":`+string(p["kv_transfer_params"])+`}`)
	require.Equal(t, http.StatusOK, code, "%s", d["error"])

	f.cancel()
	require.NoError(t, f.wait(t, 30*time.Second, "the drain"), f.stderr.String())
	csv, err := os.ReadFile(filepath.Join(f.out, "per_request.csv"))
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(csv)), "\n")
	require.Len(t, rows, 3, "header and one row per call")
	assert.Contains(t, rows[1], ",Vanilla,,p0,,")
	assert.Contains(t, rows[2], ",Seed,,p0,d1,")
	_, err = os.Stat(f.listingFile)
	assert.True(t, os.IsNotExist(err), "the listing goes with the fleet")
}

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

// fleetRun is a `pdemu serve 1p3d-mlx5 --endpoints workers` started by
// startFleet: its outputs directory, listing (and its file), stderr,
// exit and stop.
type fleetRun struct {
	*cliRun
	out, listingFile string
	listing          fleetserve.Listing
}

// startFleet starts the four endpoints of 1p3d-mlx5 and waits for their
// listing in --endpoints-file.
func startFleet(t *testing.T) *fleetRun {
	t.Helper()
	dir := t.TempDir()
	out, listing := filepath.Join(dir, "served"), filepath.Join(dir, "fleet.json")
	f := &fleetRun{out: out, listingFile: listing}
	f.cliRun = startCLI(t, "serve", "1p3d-mlx5", "--endpoints", "workers", "--listen", "127.0.0.1:0",
		"--endpoints-file", listing, "--out", out, "--time-scale", "20")
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(listing)
		return err == nil && json.Unmarshal(b, &f.listing) == nil && len(f.listing.Workers) == 4
	}, 20*time.Second, 20*time.Millisecond, "no listing: %s", f.stderr.String())
	// The listing file can land before stderr's listing, which ends with
	// the file's name: wait for both (reading stderr at once was flaky
	// under -race on a loaded machine).
	require.Eventually(t, func() bool {
		return strings.Contains(f.stderr.String(), "listing in "+listing)
	}, 20*time.Second, 20*time.Millisecond, "no listing on stderr: %s", f.stderr.String())
	return f
}

// urls are the listed workers' base URLs by worker name.
func (f *fleetRun) urls() map[string]string {
	m := map[string]string{}
	for _, w := range f.listing.Workers {
		m[w.Worker] = w.URL
	}
	return m
}

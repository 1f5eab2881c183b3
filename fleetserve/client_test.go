package fleetserve_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/fleetserve"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/output"
)

// Issue 21 row 6 in fleet mode: per_request.csv has the client columns a
// cluster endpoint writes (client_ttft_ms, client_e2e_ms, client_late_ms),
// summary.json the clients' lateness (served.client_late_ms), and every worker's
// /metrics the client lateness histogram.
func TestFleetClientColumns(t *testing.T) {
	fu := startFleet(t, fleetserve.Options{TimeScale: 10})
	url := fu.chatURLs()
	msgs := `"messages":[{"role":"user","content":"` + strings.Repeat("what did the client see? ", 20) + `"}]`
	// A streamed and a non-streamed request, each prefilled locally by a
	// decode worker.
	for _, stream := range []bool{true, false} {
		resp, err := http.Post(url["d1"], "application/json", strings.NewReader(`{"model":"pdemu","max_tokens":8,"stream":`+strconv.FormatBool(stream)+`,`+msgs+`}`))
		require.NoError(t, err)
		_, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
	}
	var workerURL string
	for _, w := range fu.listing.Workers {
		if w.Worker == "d1" {
			workerURL = w.URL
		}
	}
	assert.Contains(t, scrape(t, workerURL), `pdemu_served_late_seconds_count{event="client"`, "the client lateness histogram")
	fu.stop(t)

	res := fu.res
	rr, err := res.RunResult(loadSpec(t))
	require.NoError(t, err)
	require.Len(t, rr.Records, 2)
	require.NotNil(t, rr.Summary.Served, "summary.json served")
	require.NotNil(t, rr.Summary.Served.Client)
	assert.Equal(t, 2, rr.Summary.Served.Client.Samples)
	dir := t.TempDir()
	require.NoError(t, res.Write(dir, rr, output.WriteOptions{}))
	col, rows := testkit.ReadCSV(t, filepath.Join(dir, "per_request.csv"))
	require.Len(t, rows, 2)
	for _, c := range metrics.ClientColumns {
		require.Contains(t, col, c.Name)
	}
	for _, row := range rows {
		ttft, err1 := strconv.ParseFloat(row[col["client_ttft_ms"]], 64)
		e2e, err2 := strconv.ParseFloat(row[col["client_e2e_ms"]], 64)
		_, err3 := strconv.ParseFloat(row[col["client_late_ms"]], 64)
		require.NoError(t, err1, "request %s", row[col["id"]])
		require.NoError(t, err2)
		require.NoError(t, err3)
		assert.Positive(t, ttft)
		assert.GreaterOrEqual(t, e2e, ttft, "the end after the first token")
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var sum struct {
		Served struct {
			Client struct{ Samples int } `json:"client_late_ms"`
		} `json:"served"`
	}
	require.NoError(t, json.Unmarshal(b, &sum))
	assert.Equal(t, 2, sum.Served.Client.Samples)
}

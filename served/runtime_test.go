package served

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
)

// One runner (issue 25, step 1): a served run is actors.Run, so its
// worker series are bounded to the sample grid as a `pdemu run`'s are
// (the old copy of Run kept every change point for the server's life),
// and the run's restart counts and widened sample interval are Run's.
func TestServedSeriesAreBounded(t *testing.T) {
	spec := loadScenario(t, scenarios.Default)
	spec.Workload.SampleInterval = 10 * time.Second
	base, stop := startServeSpec(t, spec, Options{TimeScale: 200})
	const n = 40
	for i := range n {
		code, body := post(t, base, fmt.Sprint("bound-", i), fmt.Sprintf("request %d %s", i, strings.Repeat("context ", 200)), 8)
		require.Equal(t, http.StatusOK, code, body)
	}
	out, err := stop()
	require.NoError(t, err)
	require.Equal(t, n, out.Summary.Requests.Completed)
	// The points instances.csv can read: one per sample time in force,
	// plus the first and the last.
	bound := int(out.End/spec.Workload.SampleInterval) + 2
	changes := 0
	for _, s := range out.Series {
		changes += s.Points()
		assert.LessOrEqual(t, s.Points(), bound, "series %s: %d points over %v emulated (interval %v)", s.Worker, s.Points(), out.End, spec.Workload.SampleInterval)
	}
	t.Logf("%d requests over %v emulated: %d series points in all, at most %d per series", n, out.End.Round(time.Millisecond), changes, bound)
	assert.Equal(t, spec.Workload.SampleInterval, out.SampleInterval, "widened only past topology.MaxSampleRows")
}

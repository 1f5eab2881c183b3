package serve

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pdemu/pdemu/internal/promtest"
)

// Issue 21 row 11: every family of vLLM's reference Grafana dashboard is
// on /metrics before the first request, at zero, with a series per
// worker (and request_success_total per finish reason), beside the Go
// runtime's go_* and the process's process_* families; the exposition
// parses with the Prometheus text parser.
func TestDashboardFamiliesFromTheStart(t *testing.T) {
	_, base := start(t, Options{}, newFake(2))
	fams := promtest.Scrape(t, base+"/metrics")
	for _, name := range DashboardFamilies {
		f, ok := fams[name]
		if !assert.True(t, ok, "family %s is missing at start", name) {
			continue
		}
		assert.NotEmpty(t, f.GetMetric(), name)
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				assert.Zero(t, m.Counter.GetValue(), name)
			case m.Histogram != nil:
				assert.Zero(t, m.Histogram.GetSampleCount(), name)
			}
		}
	}
	reasons := map[string]bool{}
	for _, m := range fams["vllm:request_success_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "finished_reason" {
				reasons[l.GetValue()] = true
			}
		}
	}
	assert.Equal(t, map[string]bool{"stop": true, "length": true, "abort": true}, reasons)
	var goFams, procFams int
	for name := range fams {
		goFams += boolInt(strings.HasPrefix(name, "go_"))
		procFams += boolInt(strings.HasPrefix(name, "process_"))
	}
	assert.Positive(t, goFams, "go_* collectors")
	assert.Positive(t, procFams, "process_* collectors (Linux /proc)")
	assert.Contains(t, fams, "pdemu_served_late_seconds")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

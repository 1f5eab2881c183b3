package promtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A real registry served by promhttp: Sum adds counters, gauges and
// histogram counts, filters by labels, and tells a missing family (-1)
// from one at zero; Get refuses a non-200 answer.
func TestScrapeAndSum(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "c"}, []string{"worker"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h_seconds", Help: "h"})
	z := prometheus.NewCounter(prometheus.CounterOpts{Name: "z_total", Help: "z"})
	reg.MustRegister(c, g, h, z)
	c.WithLabelValues("d0").Add(2)
	c.WithLabelValues("d1").Add(3)
	g.Set(0.5)
	for range 4 {
		h.Observe(1)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	f := Scrape(t, srv.URL)
	for _, c := range []struct {
		name string
		want map[string]string
		sum  float64
	}{
		{"c_total", nil, 5},
		{"c_total", map[string]string{"worker": "d1"}, 3},
		{"c_total", map[string]string{"worker": "p0"}, 0},
		{"g", nil, 0.5},
		{"h_seconds", nil, 4},
		{"z_total", nil, 0},
		{"absent_total", nil, -1},
	} {
		assert.Equal(t, c.sum, Sum(f, c.name, c.want), "%s %v", c.name, c.want)
	}

	_, err := Get(srv.URL + "/x")
	require.NoError(t, err, "promhttp answers every path")
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	_, err = Get(notFound.URL)
	assert.EqualError(t, err, fmt.Sprintf("GET %s: status 404", notFound.URL))
}

// Package promtest reads a Prometheus text exposition for the HTTP tests
// of serve, served and cmd/pdemu: one scrape and one sum, instead of a
// parser and a switch over metric types copied into each test.
//
// Contract: test code only (nothing outside a _test.go file imports it).
// Get parses the exposition with the Prometheus text parser, the one a
// real scraper uses, so a malformed exposition fails the test; Sum adds
// counters, gauges and histogram sample counts, and answers -1 for a
// family that is not exposed at all, so that a test expecting 0 notices a
// missing family.
package promtest

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	dto "github.com/prometheus/client_model/go"
)

// Families are the metric families of one scrape, by name.
type Families = map[string]*dto.MetricFamily

// Get fetches url and parses its text exposition; a status other than 200
// is an error.
func Get(url string) (Families, error) {
	res, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", url, res.StatusCode)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(res.Body)
}

// Scrape is Get that fails the test on an error.
func Scrape(t testing.TB, url string) Families {
	t.Helper()
	fams, err := Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return fams
}

// Sum adds a family's values (counter, gauge or histogram sample count)
// over the series whose labels include every pair of want (nil: all
// series); -1 when the family is not exposed.
func Sum(fams Families, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	var s float64
	for _, m := range f.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			s += m.Counter.GetValue()
		case m.Gauge != nil:
			s += m.Gauge.GetValue()
		case m.Histogram != nil:
			s += float64(m.Histogram.GetSampleCount())
		}
	}
	return s
}

// hasLabels reports whether m carries every label pair of want.
func hasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

package served

import (
	"bytes"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/topology"
)

// testLogger routes logs to t.Log so they show only when a test fails.
func testLogger(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: tWriter{t}})
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// loadScenario parses an embedded scenario with the default options.
func loadScenario(t testing.TB, name string) *topology.Spec {
	t.Helper()
	return testkit.Scenario(t, name, topology.Options{})
}

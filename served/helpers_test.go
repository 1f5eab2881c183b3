package served

import (
	"bytes"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
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

func loadScenario(t testing.TB, name string) *topology.Spec {
	t.Helper()
	src, err := scenarios.Read(name)
	require.NoError(t, err)
	spec, err := topology.Parse("<embedded>/"+name, src, topology.Options{})
	require.NoError(t, err)
	return spec
}

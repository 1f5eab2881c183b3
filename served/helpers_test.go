package served

import (
	"testing"

	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/topology"
)

// loadScenario parses an embedded scenario with the default options.
func loadScenario(t testing.TB, name string) *topology.Spec {
	t.Helper()
	return testkit.Scenario(t, name, topology.Options{})
}

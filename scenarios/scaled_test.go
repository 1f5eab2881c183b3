package scenarios_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// TestScaledScenarios: 4p12d, 16p48d and 64p192d are the default scenario
// with n prefill and 3n decode workers, a full mesh of links, n× the
// sessions and 1/n of the stagger (constant load per worker), and ε = |D|;
// 64p192d turns routing_log.jsonl off; everything else is the default
// scenario's.
func TestScaledScenarios(t *testing.T) {
	base := testkit.Scenario(t, scenarios.Default, topology.Options{})
	for name, n := range map[string]int{"4p12d.hcl": 4, "16p48d.hcl": 16, "64p192d.hcl": 64} {
		t.Run(name, func(t *testing.T) {
			spec := testkit.Scenario(t, name, topology.Options{})
			assert.Len(t, spec.Prefill, n)
			assert.Len(t, spec.Decode, 3*n)
			assert.Len(t, spec.Links, 3*n*n)
			assert.Equal(t, 3*n, spec.Router.Epsilon)
			assert.Equal(t, base.Decode[0].KVBudgetTokens, spec.Decode[3*n-1].KVBudgetTokens)
			g, bg := spec.Workload.Generator, base.Workload.Generator
			assert.Equal(t, n*bg.Sessions, g.Sessions)
			assert.Equal(t, bg.SessionStagger/time.Duration(n), g.SessionStagger)
			g.Sessions, g.SessionStagger = bg.Sessions, bg.SessionStagger
			assert.Equal(t, bg, g, "the rest of the generator is the default scenario's")
			r := spec.Router
			r.Epsilon = base.Router.Epsilon
			assert.Equal(t, n < 64, r.RoutingLog, "only 64p192d turns the decision log off")
			r.RoutingLog = base.Router.RoutingLog
			assert.Equal(t, base.Router, r, "the rest of the router is the default scenario's")
			_, err := spec.NICs()
			assert.NoError(t, err)
		})
	}
}

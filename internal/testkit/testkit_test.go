package testkit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

func TestScenariosDirHoldsTheScenarios(t *testing.T) {
	_, err := os.Stat(filepath.Join(ScenariosDir(t), scenarios.Default))
	require.NoError(t, err)
}

func TestScenarioResolvesTracesAgainstScenariosDir(t *testing.T) {
	// claude-code.hcl names trace = "../../shared/traces/weka-claude-code".
	const rel = "../../shared/traces/weka-claude-code"
	spec := Scenario(t, "claude-code.hcl", topology.Options{})
	assert.Equal(t, filepath.Join(ScenariosDir(t), rel), spec.Workload.Trace)

	// An explicit BaseDir wins.
	spec = Scenario(t, "claude-code.hcl", topology.Options{BaseDir: "/nowhere/a/scenarios"})
	assert.Equal(t, filepath.Join("/nowhere/a/scenarios", rel), spec.Workload.Trace)
	assert.True(t, TraceMissing(spec))
}

func TestTraceMissing(t *testing.T) {
	assert.False(t, TraceMissing(&topology.Spec{}), "a generator workload needs no trace")
	spec := &topology.Spec{}
	spec.Workload.Trace = filepath.Join(t.TempDir(), "absent.jsonl")
	assert.True(t, TraceMissing(spec))
	require.NoError(t, os.WriteFile(spec.Workload.Trace, nil, 0o644))
	assert.False(t, TraceMissing(spec))
}

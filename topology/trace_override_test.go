package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Options.Trace (the CLI's --trace) replaces a generator scenario's
// workload: replay options set with --set apply to the trace instead of
// failing "Trace option without trace", and the generator is dropped.
func TestTraceOverrideTakesReplayOptions(t *testing.T) {
	set := []string{"workload.max_concurrent=16", "workload.share_prefix=true"}
	_, err := parseEmbedded("1p3d-mlx5.hcl", Options{Set: set})
	require.Error(t, err, "without a trace the options are refused")
	assert.Contains(t, err.Error(), "Trace option without trace")

	s, err := parseEmbedded("1p3d-mlx5.hcl", Options{Set: set, Trace: "../x/t.jsonl"})
	require.NoError(t, err)
	assert.Equal(t, "../x/t.jsonl", s.Workload.Trace, "the path as given")
	assert.Equal(t, 16, s.Workload.Replay.MaxConcurrent)
	assert.True(t, s.Workload.Replay.SharePrefix)

	// A trace scenario: its own format no longer applies (detected).
	s, err = parseEmbedded("claude-code.hcl", Options{Trace: "swe.jsonl"})
	require.NoError(t, err)
	assert.Equal(t, "swe.jsonl", s.Workload.Trace)
	assert.Empty(t, s.Workload.Format)
	assert.Equal(t, 16, s.Workload.Replay.MaxConcurrent, "the scenario's replay options stay")
}

// A file that extends a generator scenario and sets a trace replaces the
// base's workload source (it used to fail "Conflicting workload sources",
// with no way to drop the inherited generator block).
func TestExtendingFileTraceDropsBaseGenerator(t *testing.T) {
	src := []byte("extends = \"<embedded>/1p3d-mlx5.hcl\"\nworkload {\n  trace = \"t.jsonl\"\n  max_concurrent = 4\n}\n")
	s, err := Parse("/x/my.hcl", src, Options{})
	require.NoError(t, err)
	assert.Equal(t, "/x/t.jsonl", s.Workload.Trace)
	assert.Equal(t, 4, s.Workload.Replay.MaxConcurrent)
	// Both in one file is still a conflict.
	_, err = Parse("/x/my.hcl", []byte("workload {\n  trace = \"t.jsonl\"\n  generator \"agentic\" {}\n}\n"), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Conflicting workload sources")
}

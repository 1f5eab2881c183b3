package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/topology"
)

func TestExpectedRequests(t *testing.T) {
	gen := func(kind string, s, n, max int) *topology.Spec {
		return &topology.Spec{Workload: topology.Workload{MaxRequests: max,
			Generator: topology.Generator{Kind: kind, Sessions: s, Turns: n}}}
	}
	trace := &topology.Spec{Workload: topology.Workload{Trace: "t.jsonl", Generator: topology.Generator{Sessions: 9, Turns: 9}}}
	for name, tc := range map[string]struct {
		spec *topology.Spec
		want int
	}{
		"agentic":         {gen("", 41667, 24, 0), 1_000_008},
		"agentic capped":  {gen("agentic", 41667, 24, 1_000_000), 1_000_000},
		"max above":       {gen("", 10, 10, 500), 100},
		"swebench":        {gen("swebench", 52, 0, 0), 0},
		"swebench capped": {gen("swebench", 52, 0, 200_000), 200_000},
		"trace":           {trace, 0},
	} {
		assert.Equal(t, tc.want, expectedRequests(tc.spec), name)
	}
}

// TestLargeRunOutputs: a run of 100k requests or more drops the routing
// log unless asked for; smaller or unknown runs, and runs that ask, keep
// every file.
func TestLargeRunOutputs(t *testing.T) {
	spec := func(n int) *topology.Spec {
		s := &topology.Spec{Workload: topology.Workload{Generator: topology.Generator{Sessions: n, Turns: 1}}}
		s.Router.RoutingLog = true
		return s
	}
	s := spec(largeRunRequests)
	out, note := largeRunOutputs(s, nil, false)
	assert.NotContains(t, out, "routing_log.jsonl")
	assert.Len(t, out, len(output.Files)-1)
	assert.Contains(t, out, output.Marker)
	assert.False(t, s.Router.RoutingLog, "the router keeps no log it will not write")
	assert.Contains(t, note, "routing_log.jsonl is not written")

	for name, tc := range map[string]struct {
		n       int
		outputs []string
		asked   bool
	}{
		"small":          {largeRunRequests - 1, nil, false},
		"asked":          {largeRunRequests, nil, true},
		"outputs chosen": {largeRunRequests, []string{"routing_log.jsonl", "summary.json"}, true},
	} {
		s := spec(tc.n)
		out, note := largeRunOutputs(s, tc.outputs, tc.asked)
		assert.Equal(t, tc.outputs, out, name)
		assert.Empty(t, note, name)
		assert.True(t, s.Router.RoutingLog, name)
	}
	// Outputs chosen without routing_log.jsonl: the router keeps no log,
	// at any size.
	for _, n := range []int{10, largeRunRequests} {
		s := spec(n)
		outputs := []string{"per_request.csv", "summary.json"}
		out, note := largeRunOutputs(s, outputs, true)
		assert.Equal(t, outputs, out, n)
		assert.Empty(t, note, n)
		assert.False(t, s.Router.RoutingLog, "%d requests: the router keeps no log it will not write", n)
	}
	assert.True(t, routingLogAsked(true, nil))
	assert.True(t, routingLogAsked(false, []string{"router.tau_append=4", "router.routing_log=true"}))
	assert.False(t, routingLogAsked(false, []string{"router.log_candidates=1"}))
}

// TestRunLargeDefaultSaysSo: a real large run (the threshold lowered to
// 2,000 requests for the test) writes no routing_log.jsonl, says so on
// stderr, and lists what it wrote in summary.json.
func TestRunLargeDefaultSaysSo(t *testing.T) {
	defer func(n int) { largeRunRequests = n }(largeRunRequests)
	largeRunRequests = 2000
	dir := t.TempDir()
	stdout, stderr, err := runCLI(t, "run", "--out", dir, "-q", "--var", "sessions=84",
		"--set", `workload.generator.session_stagger="10s"`, "--max-requests", "2000", "--max-failed", "1")
	require.NoError(t, err, "stdout %s\nstderr %s", stdout, stderr)
	assert.Contains(t, stderr, "routing_log.jsonl is not written")
	_, err = os.Stat(filepath.Join(dir, "routing_log.jsonl"))
	assert.True(t, os.IsNotExist(err), "no routing_log.jsonl")
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var sum struct {
		Outputs struct {
			Written []string `json:"written"`
		} `json:"outputs"`
	}
	require.NoError(t, json.Unmarshal(b, &sum))
	assert.Contains(t, sum.Outputs.Written, "per_request.csv")
	assert.NotContains(t, sum.Outputs.Written, "routing_log.jsonl")
}

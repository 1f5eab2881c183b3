package output_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// runWith runs embedded scenario name with --set overrides and returns
// its output directory.
func runWith(t *testing.T, name string, set ...string) string {
	t.Helper()
	res := testkit.Run(t, name, topology.Options{Set: set})
	dir := t.TempDir()
	require.NoError(t, output.Write(dir, res, output.WriteOptions{}))
	return dir
}

// TestRoutingLogSwitch: router.routing_log=false writes an empty
// routing_log.jsonl and changes no other output; router.log_candidates=1
// lists only the chosen worker per try and counts the other two.
func TestRoutingLogSwitch(t *testing.T) {
	on, off := runWith(t, scenarios.Default), runWith(t, scenarios.Default, "router.routing_log=false")
	b, err := os.ReadFile(filepath.Join(off, "routing_log.jsonl"))
	require.NoError(t, err)
	assert.Empty(t, b)
	b, err = os.ReadFile(filepath.Join(on, "routing_log.jsonl"))
	require.NoError(t, err)
	assert.NotEmpty(t, b)
	for _, f := range []string{"per_request.csv", "sessions.csv", "router_windows.csv", "instances.csv", "links.csv"} {
		a, err := os.ReadFile(filepath.Join(on, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(off, f))
		require.NoError(t, err)
		assert.Equal(t, string(a), string(b), "%s: the decision log is observation only", f)
	}

	one := runWith(t, "kvscore-1p3d.hcl", "router.log_candidates=1")
	f, err := os.Open(filepath.Join(one, "routing_log.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	tries := 0
	for sc.Scan() {
		var l struct {
			Tries []struct {
				Candidates []struct {
					DWorker string `json:"d_worker"`
				} `json:"candidates"`
				Omitted *int   `json:"candidates_omitted"`
				Chosen  string `json:"chosen"`
			} `json:"tries"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		for _, tr := range l.Tries {
			require.Len(t, tr.Candidates, 1)
			assert.Equal(t, tr.Chosen, tr.Candidates[0].DWorker)
			require.NotNil(t, tr.Omitted)
			assert.Equal(t, 2, *tr.Omitted)
			tries++
		}
	}
	require.NoError(t, sc.Err())
	assert.Positive(t, tries)
}

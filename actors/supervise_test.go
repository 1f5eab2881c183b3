package actors

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/testlog"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// crashy is the default scenario, small, with d0 crashing twice and p0
// once (each restarting) and d2 slowed down.
func crashy(t *testing.T) *topology.Spec {
	spec := small(loadScenario(t, scenarios.Default), 6, 8)
	spec.Decode[0].Faults = []topology.NodeFault{
		{Kind: topology.FaultCrash, At: 5 * time.Second, For: 4 * time.Second},
		{Kind: topology.FaultCrash, At: 15 * time.Second, For: 4 * time.Second},
	}
	spec.Prefill[0].Faults = []topology.NodeFault{{Kind: topology.FaultCrash, At: 12 * time.Second, For: 2 * time.Second}}
	spec.Decode[2].Faults = []topology.NodeFault{{Kind: topology.FaultSlow, At: 3 * time.Second, For: 10 * time.Second, Factor: 4}}
	return spec
}

// TestInjectedCrashRestartsTheActor: an injected crash fails the node's
// actor and the supervisor restarts it (counted per actor); the run ends
// every request without a panic or a dead letter, and is byte-identical
// across runs and GOMAXPROCS.
func TestInjectedCrashRestartsTheActor(t *testing.T) {
	res, err := Run(context.Background(), crashy(t), Options{Logger: testlog.New(t)})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"d0": 2, "p0": 1}, res.Restarts)
	assert.Zero(t, res.Summary.Runtime.Panics)
	assert.Zero(t, res.Summary.Runtime.DeadLetters)
	s := res.Summary
	assert.Equal(t, s.Requests.Total, s.Requests.Completed+s.Requests.Failed)
	require.NotNil(t, s.Faults)
	assert.Equal(t, res.Restarts, s.Faults.Restarts)
	assert.Len(t, res.Faults, 4)

	again, err := Run(context.Background(), crashy(t), Options{Logger: testlog.New(t)})
	require.NoError(t, err)
	assert.Equal(t, string(perRequestCSV(t, res)), string(perRequestCSV(t, again)))
	prev := runtime.GOMAXPROCS(1)
	one, err := Run(context.Background(), crashy(t), Options{Logger: testlog.New(t)})
	runtime.GOMAXPROCS(prev)
	require.NoError(t, err)
	assert.Equal(t, string(perRequestCSV(t, res)), string(perRequestCSV(t, one)))
	assert.Equal(t, res.Faults, one.Faults)
}

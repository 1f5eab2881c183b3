package actors

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// Injecting from outside needs real time: a virtual run with
// Options.Started is refused before anything runs.
func TestRunRefusesInjectorOnVirtualClock(t *testing.T) {
	spec := small(loadScenario(t, scenarios.Default), 3, 3)
	spec.Workload.Clock = topology.ClockVirtual
	res, err := Run(context.Background(), spec, Options{Started: func(*Injector) {}})
	require.Error(t, err)
	assert.Nil(t, res)
	assert.Contains(t, err.Error(), "wall clock")
}

package actors

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/testlog"
	"github.com/pdemu/pdemu/scenarios"
)

// TestParkedActorsReused: a virtual run on a pooled system seats its
// shells in the actors the previous run parked (the same PIDs, no new
// spawn), and its outputs are those of a run on a fresh system, whose
// actors were all spawned for it; the clock's queue buffers come back
// empty.
func TestParkedActorsReused(t *testing.T) {
	spec := small(loadScenario(t, scenarios.Default), 6, 10)
	run := func(fresh bool) []byte {
		res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t), FreshSystem: fresh})
		require.NoError(t, err)
		return perRequestCSV(t, res)
	}
	parked := func() map[string]bool {
		// The pool hands out the most recently released system first.
		ps := borrowSystem(hclog.NewNullLogger(), false)
		defer ps.release()
		assert.Zero(t, ps.queue.len(), "a queue handed back holds no message")
		for _, s := range ps.queue.slots {
			assert.Nil(t, s.msg, "a queue handed back keeps no message alive")
		}
		out := map[string]bool{}
		for _, a := range ps.parked[1] {
			assert.Nil(t, a.sh.Load(), "a parked actor keeps no shell")
			out[a.pid.Id] = true
		}
		return out
	}
	want := run(true)
	_ = run(false)
	first := parked()
	require.NotEmpty(t, first, "a clean virtual run parks its actors")
	assert.Equal(t, want, run(false), "a run in parked actors writes what a fresh one does")
	assert.Equal(t, first, parked(), "the second run used the parked actors, and parked them again")
}

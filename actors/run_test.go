package actors

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/internal/testlog"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// loadScenario parses an embedded scenario with the default options.
func loadScenario(t testing.TB, name string) *topology.Spec {
	t.Helper()
	src, err := scenarios.Read(name)
	require.NoError(t, err)
	spec, err := topology.Parse("<embedded>/"+name, src, topology.Options{})
	require.NoError(t, err)
	return spec
}

// small shrinks a scenario's generated workload for fast tests.
func small(spec *topology.Spec, sessions, turns int) *topology.Spec {
	spec.Workload.Generator.Sessions = sessions
	spec.Workload.Generator.Turns = turns
	return spec
}

func perRequestCSV(t testing.TB, res *Result) []byte {
	var b bytes.Buffer
	require.NoError(t, metrics.WritePerRequest(&b, res.Records))
	return b.Bytes()
}

func TestDefaultScenarioEndsEveryRequestOnce(t *testing.T) {
	spec := small(loadScenario(t, scenarios.Default), 8, 12)
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
	require.NoError(t, err)
	s := res.Summary
	assert.Equal(t, 8*12, s.Requests.Total)
	assert.Equal(t, s.Requests.Total, s.Requests.Completed+s.Requests.Failed)
	assert.Zero(t, s.Runtime.DeadLetters)
	assert.Zero(t, s.Runtime.Panics)
	ids := map[int64]bool{}
	for _, r := range res.Records {
		assert.False(t, ids[r.ID], "request %d recorded twice", r.ID)
		ids[r.ID] = true
		if !r.Failed {
			assert.GreaterOrEqual(t, r.E2E, r.TTFT, "request %d", r.ID)
			assert.Positive(t, r.TTFT, "request %d", r.ID)
		}
	}
	// The agentic default is the fast path's home ground.
	direct := s.Modes["Direct"]
	for m, n := range s.Modes {
		if m != "Direct" {
			assert.Greater(t, direct, n, "Direct should dominate, modes %v", s.Modes)
		}
	}
	// Invariant 1: no decode worker ever held more than ρ·K_d.
	used := 0
	for _, w := range s.Workers {
		if w.Kind == "decode" {
			assert.LessOrEqual(t, w.MaxKV, w.CapKV, w.Name)
			used += w.MaxKV
		}
	}
	assert.Positive(t, used)
}

func TestVirtualRunsAreDeterministic(t *testing.T) {
	run := func(seed uint64, procs int) []byte {
		prev := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(prev)
		spec := small(loadScenario(t, scenarios.Default), 6, 10)
		spec.Workload.Seed = seed
		res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
		require.NoError(t, err)
		return perRequestCSV(t, res)
	}
	a := run(7, 1)
	b := run(7, runtime.NumCPU())
	c := run(7, 2)
	assert.Equal(t, a, b, "same seed, different GOMAXPROCS")
	assert.Equal(t, a, c, "same seed")
	assert.NotEqual(t, a, run(8, 2), "a different seed must give a different run")
}

func TestVanillaScenarioUsesPrefillForEverything(t *testing.T) {
	spec := small(loadScenario(t, "vanilla-pd-1p3d.hcl"), 4, 6)
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
	require.NoError(t, err)
	assert.Equal(t, res.Summary.Requests.Completed, res.Summary.Modes["Vanilla"])
	for _, r := range res.Records {
		assert.NotEmpty(t, r.P)
		assert.Positive(t, r.TransferBytes)
	}
}

func TestWallClockRunReportsLateness(t *testing.T) {
	if testing.Short() {
		t.Skip("wall-clock run takes real time")
	}
	spec := small(loadScenario(t, scenarios.Default), 3, 3)
	spec.Workload.Clock = topology.ClockWall
	spec.Workload.TimeScale = 50
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t), WallTimeout: 2 * time.Minute})
	require.NoError(t, err)
	s := res.Summary
	assert.Equal(t, 9, s.Requests.Total)
	assert.Equal(t, s.Requests.Total, s.Requests.Completed+s.Requests.Failed)
	require.NotNil(t, s.Clock.Lateness)
	assert.Positive(t, s.Clock.Lateness.Samples)
	assert.GreaterOrEqual(t, s.Clock.Lateness.Max, s.Clock.Lateness.P50)
	assert.Zero(t, s.Runtime.DeadLetters)
}

// failingSource is inner until its at-th Next; from then on each Next
// returns fail() (a trace stays broken past a bad record).
type failingSource struct {
	inner workload.Source
	at, n int
	fail  func() (*workload.Request, error)
}

func (f *failingSource) Next() (*workload.Request, error) {
	f.n++
	if f.n >= f.at {
		return f.fail()
	}
	return f.inner.Next()
}

// TestActorPanicFailsTheRun: a source that panics on its third request
// (an actor bug) must fail the run loudly, not be restarted silently.
func TestActorPanicFailsTheRun(t *testing.T) {
	spec := small(loadScenario(t, scenarios.Default), 4, 4)
	src, err := Source(spec, false)
	require.NoError(t, err)
	panics := &failingSource{inner: src, at: 3, fail: func() (*workload.Request, error) { panic("boom") }}
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t), Source: panics})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "panicked")
	require.NotNil(t, res)
	assert.EqualValues(t, 1, res.Summary.Runtime.Panics)
}

// TestSourceErrorStopsTheRun: a source that fails like a bad trace
// record stops the run with its error.
func TestSourceErrorStopsTheRun(t *testing.T) {
	spec := small(loadScenario(t, scenarios.Default), 4, 4)
	src, err := Source(spec, false)
	require.NoError(t, err)
	bad := &failingSource{inner: src, at: 5, fail: func() (*workload.Request, error) {
		return nil, errors.New("trace.jsonl:5: field \"input_length\": not a number")
	}}
	_, err = Run(context.Background(), spec, Options{Logger: testlog.New(t), Source: bad})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "trace.jsonl:5")
}

func TestOpenLoopEndsEveryRequest(t *testing.T) {
	spec := small(loadScenario(t, scenarios.Default), 6, 6)
	spec.Workload.Loop = topology.LoopOpen
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
	require.NoError(t, err)
	assert.Equal(t, 36, res.Summary.Requests.Total)
}

func TestAdmissionFreeBaselinesEndEveryRequest(t *testing.T) {
	for _, pol := range []string{"sticky_only", "kv_score"} {
		t.Run(pol, func(t *testing.T) {
			spec := small(loadScenario(t, scenarios.Default), 10, 10)
			spec.Router.Policy = pol
			res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
			require.NoError(t, err)
			s := res.Summary
			assert.Equal(t, 100, s.Requests.Total)
			assert.Equal(t, s.Requests.Total, s.Requests.Completed+s.Requests.Failed)
			assert.Positive(t, s.Modes["Direct"])
			assert.Zero(t, s.Modes["Fallback"], "admission-free policies never fall back")
			for _, w := range s.Workers {
				if w.Kind == "decode" {
					assert.LessOrEqual(t, w.MaxKV, w.CapKV, w.Name)
				}
			}
		})
	}
}

// TestVirtualClockSurvivesDeadLetters: a message to an actor that is gone
// is counted and does not hang the virtual clock.
func TestVirtualClockSurvivesDeadLetters(t *testing.T) {
	ps := borrowSystem(testlog.New(t), false)
	sys := ps.sys
	defer sys.Shutdown()
	clk := NewVirtualClock(sys)
	var n atomic.Int64
	sub := watchDeadLetters(sys, clk, testlog.New(t), &n)
	defer sys.EventStream.Unsubscribe(sub)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	require.NoError(t, sys.Root.StopFuture(pid).Wait())
	clk.Send(1, 1, pid, cluster.Start{}, time.Second)
	done := make(chan error, 1)
	go func() { done <- clk.Run(context.Background(), 0) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("virtual clock hung on a dead letter")
	}
	assert.EqualValues(t, 1, n.Load())
}

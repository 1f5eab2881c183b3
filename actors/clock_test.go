package actors

import (
	"context"
	"io"
	"os"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/internal/minheap"
	"github.com/pdemu/pdemu/internal/testlog"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// longPrompts is a CI-sized workload whose TTFT is long (seconds of
// prefill) and whose run is short: n single-turn sessions of `in` prompt
// tokens, one every gap.
type longPrompts struct {
	n, in int
	gap   time.Duration
	i     int
}

func (s *longPrompts) Next() (*workload.Request, error) {
	if s.i >= s.n {
		return nil, io.EOF
	}
	i := s.i
	s.i++
	return &workload.Request{ID: int64(i), Session: int32(i), SessionName: "s" + string(rune('a'+i)), Arrival: time.Duration(i) * s.gap,
		InputLen: s.in, OutputLen: 8, AppendLen: s.in, BlockTokens: 64, Last: true}, nil
}

func wallRun(t *testing.T, spec *topology.Spec, scale float64, src workload.Source) metrics.Summary {
	t.Helper()
	spec.Workload.Clock = topology.ClockWall
	spec.Workload.TimeScale = scale
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t), WallTimeout: 2 * time.Minute, Source: src})
	require.NoError(t, err)
	return res.Summary
}

// TestWallFidelityWarnsWhenUnsustainable: the default scenario (shrunk for
// CI) at a time-scale no machine sustains (×100,000: one real millisecond
// of timer lateness is 100 emulated seconds) is judged distorted, with the
// warning in summary.json and --strict-wall's error.
func TestWallFidelityWarnsWhenUnsustainable(t *testing.T) {
	if testing.Short() {
		t.Skip("wall-clock run takes real time")
	}
	s := wallRun(t, small(loadScenario(t, scenarios.Default), 4, 4), 100000, nil)
	c := s.Clock
	require.NotNil(t, c.EmulatedLateness)
	require.NotNil(t, c.SaturatedShare)
	t.Logf("x100000: real lateness p99 %.3f ms, emulated p50/p99/max %.1f/%.1f/%.1f ms, saturated %.2f, ttft p50 %.1f ms",
		c.Lateness.P99, c.EmulatedLateness.P50, c.EmulatedLateness.P99, c.EmulatedLateness.Max, *c.SaturatedShare, s.TTFT.P50)
	assert.Equal(t, metrics.FidelityDistorted, c.Fidelity)
	assert.Contains(t, c.FidelityBound, "5% of ttft_ms.p50")
	// Lateness.P99 is printed rounded to the µs (±0.0005 ms), which ×100000
	// is ±50 emulated ms; seen: 0.032 ms real against 3163 emulated.
	assert.InDelta(t, c.Lateness.P99*100000, c.EmulatedLateness.P99, 0.01*c.EmulatedLateness.P99+0.0005*100000+1)
	require.NotEmpty(t, s.Warnings)
	assert.Contains(t, s.Warnings[len(s.Warnings)-1], "wall clock distorted at time-scale 100000")
	assert.Error(t, metrics.StrictWall(s))
}

// TestWallFidelityQuietWhenSustainable: a CI-sized workload whose TTFT is
// seconds long (four 30k-token prompts) at ×1 stays within the bound:
// timer lateness of a few real ms is tens of emulated ms, far below 5 % of
// a multi-second TTFT, and the process idles between deliveries.
//
// Whether a machine sustains ×1 depends on its load (a shared 2-core CI
// machine once delayed one timer by 32 s), so this is a timing assertion:
// it runs only with PDEMU_TIMING_TESTS=1 (speed and fidelity figures live
// in benchmarks and the closing notes, not in CI).
func TestWallFidelityQuietWhenSustainable(t *testing.T) {
	if testing.Short() {
		t.Skip("wall-clock run takes real time")
	}
	if os.Getenv("PDEMU_TIMING_TESTS") == "" {
		t.Skip("timing assertion: set PDEMU_TIMING_TESTS=1 on an idle machine")
	}
	s := wallRun(t, loadScenario(t, scenarios.Default), 1, &longPrompts{n: 4, in: 30000, gap: 500 * time.Millisecond})
	c := s.Clock
	require.NotNil(t, c.EmulatedLateness)
	t.Logf("x1: real lateness p99 %.3f ms, emulated p50/p99/max %.1f/%.1f/%.1f ms, saturated %.3f, ttft p50 %.1f ms, %d requests",
		c.Lateness.P99, c.EmulatedLateness.P50, c.EmulatedLateness.P99, c.EmulatedLateness.Max, *c.SaturatedShare, s.TTFT.P50, s.Requests.Completed)
	assert.Equal(t, 4, s.Requests.Completed)
	assert.Equal(t, metrics.FidelityOK, c.Fidelity, c.FidelityBound)
	assert.Empty(t, metrics.WallWarning(c))
	assert.NoError(t, metrics.StrictWall(s))
}

// TestWallTimerOrder: the wall clock's timer heap pops by (due, seq), like
// a sort, for any pushes.
func TestWallTimerOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := time.Unix(0, 0)
		h := minheap.New(lessWtimer)
		var want []wtimer
		for i, d := range rapid.SliceOf(rapid.IntRange(0, 20)).Draw(t, "dues") {
			w := wtimer{due: base.Add(time.Duration(d)), seq: uint64(i)}
			h.Push(w)
			want = append(want, w)
		}
		sort.SliceStable(want, func(i, j int) bool { return want[i].due.Before(want[j].due) })
		for _, w := range want {
			got := h.Pop()
			require.Equal(t, w.seq, got.seq)
		}
		require.Zero(t, h.Len())
	})
}

// TestWallClockTimersDeliverAll: every timed message reaches its actor
// once, each with a lateness sample.
func TestWallClockTimersDeliverAll(t *testing.T) {
	ps := borrowSystem(hclog.NewNullLogger(), true)
	defer ps.sys.Shutdown()
	const n = 50
	var got atomic.Int64
	all := make(chan struct{})
	pid := ps.sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if fromClock(ctx.Message()) && got.Add(1) == n {
			close(all)
		}
	}))
	c := NewWallClock(ps.sys, 1000) // 1 emulated s = 1 real ms
	for i := 0; i < n; i++ {
		c.Send(1, uint64(i), pid, cluster.Wake{At: time.Duration(i)}, time.Duration(n-i)*time.Second)
	}
	<-all
	c.Stop()
	require.Len(t, c.Lateness(), n)
	require.Equal(t, int64(n), got.Load())
}

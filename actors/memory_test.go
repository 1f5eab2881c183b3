package actors

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/internal/testlog"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/scenarios"
)

// countSink counts the records of a streaming run.
type countSink int

func (c *countSink) Record(metrics.Record) error { *c++; return nil }

// allocOf returns the bytes f allocated.
func allocOf(t *rapid.T, f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestMemoryBoundedByWorkNotSpan: a run's memory is bounded by its work
// (requests, rows kept), never by the emulated time it spans. Random
// spans up to the documented maxima (trace timestamps ≤ 100 years,
// think_time and session_stagger ≤ 24 h) with a few dozen requests must
// allocate well under a cap; a per-second structure (the arrival bins
// were one: 8 bytes per emulated second) allocates gigabytes instead.
func TestMemoryBoundedByWorkNotSpan(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(512 << 20))
	const capBytes = 96 << 20
	dir := t.TempDir()
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		spec := loadScenario(t, scenarios.Default)
		spec.Workload.SampleInterval = time.Hour // instances.csv rows are kept per interval
		if rapid.Bool().Draw(rt, "trace") {
			const maxSpanMS = 100 * 365 * 24 * 3600 * 1000
			k := rapid.IntRange(2, 40).Draw(rt, "records")
			ts := make([]int64, k)
			for i := range ts {
				ts[i] = rapid.Int64Range(0, maxSpanMS).Draw(rt, "ts")
			}
			ts[0], ts[k-1] = 0, rapid.Int64Range(maxSpanMS/2, maxSpanMS).Draw(rt, "last")
			slices.Sort(ts)
			var b strings.Builder
			for i, at := range ts {
				fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 100, "output_length": 5, "hash_ids": [%d]}`+"\n", at, i+1)
			}
			n++
			p := filepath.Join(dir, fmt.Sprintf("t%d.jsonl", n))
			require.NoError(rt, os.WriteFile(p, []byte(b.String()), 0o644))
			spec.Workload.Trace, spec.Workload.Format = p, "mooncake"
		} else {
			g := &spec.Workload.Generator
			g.Sessions = rapid.IntRange(1, 3).Draw(rt, "sessions")
			g.Turns = rapid.IntRange(1, 60).Draw(rt, "turns")
			g.ThinkTime = time.Duration(rapid.Int64Range(int64(time.Hour), int64(24*time.Hour)).Draw(rt, "think"))
			g.SessionStagger = time.Duration(rapid.Int64Range(0, int64(24*time.Hour)).Draw(rt, "stagger"))
			g.AppendTokens, g.OutputTokens, g.FirstTokens, g.SystemTokens = 10, 5, 100, 100
		}
		stream := rapid.Bool().Draw(rt, "stream")
		var (
			res  *Result
			sink countSink
		)
		got := allocOf(rt, func() {
			opts := Options{Logger: testlog.New(t)}
			if stream {
				opts.Records = &sink
			}
			var err error
			res, err = Run(context.Background(), spec, opts)
			require.NoError(rt, err)
			a := res.Arrivals
			if !stream {
				a, sink = metrics.ArrivalsOf(res.Records), countSink(len(res.Records))
			}
			require.NoError(rt, metrics.WriteRouterWindowsOf(io.Discard, a, res.RouterEvents, metrics.RouterWindow(res.End)))
		})
		require.Greater(rt, int(sink), 0)
		require.Less(rt, got, uint64(capBytes), "allocated %d MiB for %d requests over %v emulated",
			got>>20, int(sink), res.End)
	})
}

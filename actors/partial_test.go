package actors

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/testlog"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// checkPartialResult: a stopped run lists every released request once,
// ended or unfinished; the unfinished ones say where they were; the
// summary is partial and counts them apart from total.
func checkPartialResult(t *testing.T, res *Result, err error, by string) {
	t.Helper()
	var pe *PartialError
	require.ErrorAs(t, err, &pe, "%v", err)
	assert.Equal(t, by, pe.StoppedBy)
	s := res.Summary
	assert.True(t, s.Partial)
	assert.Equal(t, by, s.StoppedBy)
	require.NotEmpty(t, res.Unfinished, "a run stopped mid-way has requests in flight")
	assert.Equal(t, len(res.Unfinished), s.Requests.Unfinished)
	assert.Equal(t, len(res.Records), s.Requests.Total)
	assert.Equal(t, s.Requests.Total, s.Requests.Completed+s.Requests.Failed)
	// Run checked released = total + unfinished: its error would carry
	// the mismatch (or any other fault) beside the PartialError.
	assert.Equal(t, pe.Error(), err.Error(), "the stop is the run's only error")
	seen := map[int64]int{}
	for _, r := range res.Records {
		seen[r.ID]++
	}
	wheres := map[string]bool{}
	for _, u := range res.Unfinished {
		seen[u.ID]++
		assert.Equal(t, metrics.StateUnfinished, u.State)
		assert.Equal(t, int64(-1), int64(u.E2E))
		assert.True(t, strings.HasPrefix(u.Reason, "in "), "unfinished %d says where it was: %q", u.ID, u.Reason)
		wheres[strings.SplitN(strings.TrimPrefix(u.Reason, "in "), ";", 2)[0]] = true
	}
	for id, n := range seen {
		assert.Equal(t, 1, n, "request %d listed once", id)
	}
	for w := range wheres {
		assert.Contains(t, append(append([]string{}, metrics.TTFTPartNames...), "decode"), w)
	}
	assert.Contains(t, s.Warnings[0], "partial run: stopped by "+by)
}

func TestVirtualRunStoppedBySignalListsUnfinished(t *testing.T) {
	spec := small(loadScenario(t, "1p3d-tcp.hcl"), 16, 8)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	res, err := Run(ctx, spec, Options{Logger: testlog.New(t), FreshSystem: true, Progress: func(p Progress) {
		if p.Ended >= 30 {
			cancel(StopCause("SIGINT"))
		}
	}})
	require.NotNil(t, res)
	checkPartialResult(t, res, err, "SIGINT")
}

func TestWallRunStoppedByTimeoutListsUnfinished(t *testing.T) {
	spec := small(loadScenario(t, "1p3d-tcp.hcl"), 8, 8)
	spec.Workload.Clock, spec.Workload.TimeScale = topology.ClockWall, 2
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t), WallTimeout: 1500 * time.Millisecond})
	require.NotNil(t, res)
	checkPartialResult(t, res, err, StoppedByWallTimeout)
}

func TestWallRunCancelledListsUnfinished(t *testing.T) {
	spec := small(loadScenario(t, "1p3d-tcp.hcl"), 8, 8)
	spec.Workload.Clock, spec.Workload.TimeScale = topology.ClockWall, 2
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cancel(StopCause("SIGTERM"))
	}()
	res, err := Run(ctx, spec, Options{Logger: testlog.New(t), WallTimeout: time.Minute})
	require.NotNil(t, res)
	checkPartialResult(t, res, err, "SIGTERM")
}

// links.csv, router_windows.csv and routing_log.jsonl are fed by a KVC
// P/D run: every NIC drains to 0 at the end, the router events add up to
// the sessions' counters, and every request's log matches its record and
// chooses by the logged 4-tuples.
func TestKVCRunFeedsLinksRouterEventsAndLog(t *testing.T) {
	spec := small(loadScenario(t, "1p3d-tcp.hcl"), 24, 10)
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
	require.NoError(t, err)

	var lb bytes.Buffer
	require.NoError(t, metrics.WriteLinks(&lb, res.Links))
	rows, err := csv.NewReader(&lb).ReadAll()
	require.NoError(t, err)
	require.Greater(t, len(rows), 3, "links.csv has change points")
	last := map[string][]string{}
	busy := false
	for _, r := range rows[1:] {
		last[r[1]] = r
		busy = busy || r[4] != "0" && r[3] != "0.000"
	}
	assert.True(t, busy, "some row shows a transfer moving")
	for nic, r := range last {
		assert.Equal(t, []string{"0", "0.000", "0"}, r[2:5], "NIC %s drained at the end", nic)
	}

	var wb bytes.Buffer
	require.NoError(t, metrics.WriteRouterWindows(&wb, res.Records, res.RouterEvents, metrics.RouterWindow(res.End)))
	wrows, err := csv.NewReader(&wb).ReadAll()
	require.NoError(t, err)
	sums := make([]int, 4) // migrations, blacklists, fallbacks, rejections
	for _, r := range wrows[1:] {
		for i := range sums {
			n, err := strconv.Atoi(r[4+i])
			require.NoError(t, err)
			sums[i] += n
		}
	}
	rt := res.Summary.Router
	require.NotNil(t, rt)
	assert.Equal(t, []int{rt.Migrations, rt.Blacklists, rt.Fallbacks, rt.Rejections}, sums)
	assert.Positive(t, rt.Rejections, "the scenario rejects some admissions (else this test checks little)")

	type cand struct {
		DWorker  string     `json:"d_worker"`
		Key      [4]float64 `json:"key"`
		Eligible bool       `json:"eligible"`
	}
	type try struct {
		Candidates []cand `json:"candidates"`
		Chosen     string `json:"chosen"`
		Reply      string `json:"reply"`
		Reason     string `json:"reply_reason"`
	}
	type line struct {
		ID       int64  `json:"id"`
		Session  string `json:"session"`
		Tries    []try  `json:"tries"`
		Fallback bool   `json:"fallback"`
		Mode     string `json:"mode"`
		PWorker  string `json:"p_worker"`
		DWorker  string `json:"d_worker"`
	}
	less := func(a, b [4]float64) bool {
		for i := range a {
			if a[i] != b[i] {
				return a[i] < b[i]
			}
		}
		return false
	}
	for _, r := range res.Records {
		require.NotEmpty(t, r.RouteLog, "request %d has a routing_log line", r.ID)
		var l line
		require.NoError(t, json.Unmarshal(r.RouteLog, &l))
		assert.Equal(t, r.ID, l.ID)
		assert.Equal(t, r.Session, l.Session)
		assert.Equal(t, r.Mode, l.Mode, "request %d", r.ID)
		assert.Equal(t, r.D, l.DWorker, "request %d", r.ID)
		assert.Equal(t, r.P, l.PWorker, "request %d", r.ID)
		assert.Equal(t, r.Mode == "Fallback", l.Fallback)
		var rejected []string
		for i, tr := range l.Tries {
			if tr.Reply == "rejected" {
				rejected = append(rejected, tr.Reason)
			} else if !l.Fallback {
				assert.Equal(t, len(l.Tries)-1, i, "request %d: only the last try is admitted", r.ID)
				assert.Equal(t, "admitted", tr.Reply)
				assert.Equal(t, r.D, tr.Chosen)
			}
			// The chosen worker has the largest key among the eligible
			// ones (full ties go to the lowest index, listed first).
			var best *cand
			for j := range tr.Candidates {
				c := &tr.Candidates[j]
				if c.Eligible && (best == nil || less(best.Key, c.Key)) {
					best = c
				}
			}
			if best != nil {
				assert.Equal(t, best.DWorker, tr.Chosen, "request %d try %d", r.ID, i)
			}
		}
		if !r.Failed && r.Mode != "Fallback" {
			assert.Equal(t, r.Reason, strings.Join(rejected, ";"), "request %d", r.ID)
		}
	}
}

// warnSource is a workload whose loader warns (workload.Warner).
type warnSource struct{ workload.Source }

func (warnSource) Warnings() []string { return []string{"3 requests record 0 output tokens"} }

// A trace loader's warnings reach summary.json (trace.warnings and
// warnings, which the terminal prints).
func TestTraceWarningsReachTheSummary(t *testing.T) {
	spec := small(loadScenario(t, "1p3d-tcp.hcl"), 2, 2)
	src, err := Source(spec, false)
	require.NoError(t, err)
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t), Source: warnSource{src}})
	require.NoError(t, err)
	assert.Equal(t, []string{"3 requests record 0 output tokens"}, res.Summary.Trace.Warnings)
	assert.Contains(t, res.Summary.Warnings, "trace: 3 requests record 0 output tokens")
}

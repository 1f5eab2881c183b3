package metrics

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/workload"
)

func TestQuantilesNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	q := QuantilesMS(ds)
	assert.Equal(t, Quantiles{P50: 50, P90: 90, P99: 99, Mean: 50.5, Max: 100}, q)
	assert.Equal(t, Quantiles{}, QuantilesMS(nil))
	assert.Equal(t, 7.0, QuantilesMS([]time.Duration{7 * time.Millisecond}).P99)
}

func TestSeriesStepFunction(t *testing.T) {
	s := NewSeries("d0", "decode")
	s.Observe(0, 10, 0, 1)
	s.Observe(time.Second, 10, 0, 1) // unchanged: not stored
	s.Observe(2*time.Second, 20, 1, 2)
	s.Observe(2*time.Second, 30, 1, 2) // same instant: last value wins
	assert.Equal(t, 2, s.Points())
	assert.Equal(t, 10, s.At(1500*time.Millisecond).KV)
	assert.Equal(t, 30, s.At(2*time.Second).KV)
	assert.Equal(t, 30, s.At(time.Hour).KV)
	assert.Equal(t, 30, s.Max())
}

func job(id int64, mode policy.Mode, failed string) *gpu.Job {
	return &gpu.Job{
		Req:  &workload.Request{ID: id, SessionName: "s1", Turn: int(id), InputLen: 100, OutputLen: 10},
		Mode: mode, P: 0, D: 1, Arrival: time.Second, FirstToken: 1100 * time.Millisecond, Done: 2 * time.Second,
		Failed: failed, Reasons: []string{policy.ReasonNoCapacity},
	}
}

func TestCollectorRejectsDuplicatesAndSummarizes(t *testing.T) {
	c := NewCollector([]string{"p0"}, []string{"d0", "d1"})
	require.NoError(t, c.Add(job(1, policy.ModeReseed, "")))
	require.NoError(t, c.Add(job(0, policy.ModeDirect, "")))
	require.NoError(t, c.Add(job(2, policy.ModeFallback, gpu.ReasonExceedsPool)))
	err := c.Add(job(1, policy.ModeReseed, ""))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ended twice")

	recs := c.Records()
	require.Len(t, recs, 3)
	assert.EqualValues(t, 0, recs[0].ID, "sorted by id")
	assert.Empty(t, recs[0].P, "Direct uses no prefill worker")
	assert.Equal(t, "p0", recs[1].P)
	assert.Equal(t, "d1", recs[1].D)
	assert.Equal(t, policy.ReasonNoCapacity, recs[1].Reason)

	s := Summarize(recs)
	assert.Equal(t, Counts{Total: 3, Completed: 2, Failed: 1, FailReasons: map[string]int{gpu.ReasonExceedsPool: 1}, FailedShare: 0.3333}, s.Requests)
	require.Len(t, s.Warnings, 1)
	assert.Equal(t, "1 of 3 requests failed (33.3%): exceeds-kv-pool 1", s.Warnings[0])
	assert.Equal(t, 100.0, s.TTFT.P50)
	assert.Equal(t, 1, s.Modes["Direct"])
	assert.Equal(t, 0, s.Modes["Fallback"], "failed requests are not counted in modes")
	assert.Equal(t, 0.5, s.PrefillShare)

	var b bytes.Buffer
	require.NoError(t, WriteSummary(&b, s))
	var back map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	for _, k := range []string{"requests", "ttft_ms", "e2e_ms", "modes", "runtime", "clock"} {
		assert.Contains(t, back, k)
	}
}

func TestWritePerRequestAndInstances(t *testing.T) {
	c := NewCollector([]string{"p0"}, []string{"d0"})
	require.NoError(t, c.Add(job(0, policy.ModeDirect, "")))
	var b bytes.Buffer
	require.NoError(t, WritePerRequest(&b, c.Records()))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, strings.Join(PerRequestHeader, ","), lines[0])
	assert.Equal(t, "0,s1,0,1000.000,100.000,1000.000,Direct,no-d-capacity,,,100,10,0,0,0,0,false,,,,"+
		",0.000,0.000,0.000,0.000,0.000,0.000,100.000,100.000,completed,", lines[1])

	s := NewSeries("d0", "decode")
	s.Observe(500*time.Millisecond, 7, 1, 2)
	b.Reset()
	require.NoError(t, WriteInstances(&b, []*Series{s}, time.Second, 1500*time.Millisecond, map[string]int{"d0": 64}))
	assert.Equal(t, "t_ms,worker,kind,bucket,kv_tokens,queue,running,cap_kv_tokens\n0.000,d0,decode,,0,0,0,64\n1000.000,d0,decode,,7,1,2,64\n2000.000,d0,decode,,7,1,2,64\n", b.String())
}

func TestUnfinishedRecord(t *testing.T) {
	c := NewCollector([]string{"p0"}, []string{"d0", "d1"})
	j := job(5, policy.ModeSeed, "")
	j.FirstToken = 0
	r := c.Unfinished(j)
	assert.Equal(t, StateUnfinished, r.State)
	assert.Equal(t, time.Duration(-1), r.TTFT)
	assert.False(t, r.HasParts)
	assert.Equal(t, "p0", r.P)
	assert.False(t, c.Seen(5), "not recorded as ended")
	s := Summarize([]Record{r})
	assert.Equal(t, 0, s.Requests.Total)
	assert.Equal(t, 1, s.Requests.Unfinished)
}

func TestDigest(t *testing.T) {
	assert.Equal(t, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Digest(nil))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte("x"), 0o644))
	d1, err := DigestPath(dir)
	require.NoError(t, err)
	f, err := DigestPath(filepath.Join(dir, "a.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, Digest([]byte("x")), f)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte("y"), 0o644))
	d2, err := DigestPath(dir)
	require.NoError(t, err)
	assert.NotEqual(t, d1, d2, "a directory's digest follows its files")
	_, err = DigestPath(filepath.Join(dir, "missing"))
	assert.Error(t, err)
}

// TestSeriesGrid: a series with a grid answers At at every multiple of the
// interval, and Max, exactly as one that keeps every change point, while
// keeping at most one point per sample time (plus the latest).
func TestSeriesGrid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		iv := time.Duration(rapid.IntRange(1, 20).Draw(t, "iv"))
		full, grid := NewSeries("w", "decode"), NewSeries("w", "decode")
		grid.SetGrid(iv)
		now := time.Duration(0)
		for range rapid.IntRange(0, 200).Draw(t, "n") {
			now += time.Duration(rapid.IntRange(0, 7).Draw(t, "dt"))
			kv, q, r := rapid.IntRange(0, 5).Draw(t, "kv"), rapid.IntRange(0, 2).Draw(t, "q"), rapid.IntRange(0, 2).Draw(t, "r")
			full.Observe(now, kv, q, r)
			grid.Observe(now, kv, q, r)
		}
		require.Equal(t, full.Max(), grid.Max())
		for k := time.Duration(0); k <= now/iv+1; k++ {
			require.Equal(t, full.At(k*iv), grid.At(k*iv), "t = %d", k*iv)
		}
		require.LessOrEqual(t, grid.Points(), int(now/iv)+2)
	})
}

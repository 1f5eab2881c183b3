package metrics_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// TestTTFTPartsSumToTTFT runs scenarios of every shape (KVC P/D over TCP
// and RDMA, admission-free sticky, vanilla P/D, data-parallel fused,
// bucketed fused with prefix fetches) and checks, for every request that
// got a first token, that its TTFT parts are non-negative (the job's
// timeline points are in order) and add up to its TTFT.
func TestTTFTPartsSumToTTFT(t *testing.T) {
	for _, name := range []string{"1p3d-tcp.hcl", "1p3d-mlx5.hcl", "sticky-1p3d.hcl", "vanilla-pd-1p3d.hcl", "dp4.hcl", "buckets-3.hcl", "reseed-tcp-loopback.hcl"} {
		t.Run(name, func(t *testing.T) {
			res := testkit.Run(t, name, topology.Options{})
			nonzero := map[string]int{}
			for _, r := range res.Records {
				if r.TTFT < 0 {
					assert.False(t, r.HasParts)
					continue
				}
				require.True(t, r.HasParts, "request %d", r.ID)
				for k, d := range r.Parts.Slice() {
					require.GreaterOrEqual(t, d, time.Duration(0), "request %d (%s) part %s", r.ID, r.Mode, metrics.TTFTPartNames[k])
					if d > 0 {
						nonzero[metrics.TTFTPartNames[k]]++
					}
				}
				require.Equal(t, r.TTFT, r.Parts.Sum(), "request %d (%s)", r.ID, r.Mode)
			}
			t.Logf("requests with a non-zero part: %v", nonzero)
			assert.NotEmpty(t, nonzero)
		})
	}
}

// TestSplitTTFTProperty: for random ordered timelines of every mode, the
// parts are non-negative, sum to FirstToken − Arrival, and the parts a
// mode does not pass are 0.
func TestSplitTTFTProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mode := rapid.SampledFrom(policy.AllModes).Draw(t, "mode")
		usesP := mode.UsesPrefill()
		at := time.Duration(rapid.Int64Range(0, 1e9).Draw(t, "arrival"))
		step := func(label string) time.Duration {
			at += time.Duration(rapid.Int64Range(0, 1e9).Draw(t, label))
			return at
		}
		j := &gpu.Job{Req: &workload.Request{OutputLen: 2}, Mode: mode, P: -1, D: 0}
		j.Arrival = at
		if usesP {
			j.P = 0
			j.KVReserved = j.Arrival // a Seed reserved at admission, before its prefill
			j.PQueued = step("pq")
			j.PrefillStart = step("ps")
			j.PrefillEnd = step("pe")
			j.TransferStart = step("ts")
			j.TransferEnd = step("te")
			j.DGot = step("dg")
			if mode == policy.ModeFallback || mode == policy.ModeVanilla {
				j.KVReserved = step("kv")
			}
		} else {
			j.DGot = step("dg")
			j.KVReserved = step("kv")
			j.DPrefillStart = step("dps")
			j.PrefillStart = j.DPrefillStart
			j.DPrefillEnd = step("dpe")
		}
		j.FirstToken = step("ft")
		p := metrics.SplitTTFT(j)
		for _, d := range p.Slice() {
			if d < 0 {
				t.Fatalf("negative part: %+v", p)
			}
		}
		if p.Sum() != j.FirstToken-j.Arrival {
			t.Fatalf("sum %v != ttft %v", p.Sum(), j.FirstToken-j.Arrival)
		}
		if usesP && p.DPrefill != 0 || !usesP && (p.PQueue != 0 || p.Prefill != 0 || p.Transfer != 0) {
			t.Fatalf("a part the mode does not pass is not 0: %+v", p)
		}
	})
}

func TestAttachWorkersCountsFusedAndWarnsImbalance(t *testing.T) {
	var recs []metrics.Record
	for i := 0; i < 100; i++ {
		d := "w0"
		if i%10 == 0 {
			d = "w1"
		}
		recs = append(recs, metrics.Record{ID: int64(i), Mode: "Fused", D: d, TTFT: 1e6, E2E: 2e6, TPOT: -1})
	}
	s := metrics.Summarize(recs)
	ws := []metrics.WorkerSummary{{Name: "w0", Kind: "fused"}, {Name: "w1", Kind: "fused"}, {Name: "w2", Kind: "fused"}}
	metrics.AttachWorkers(&s, ws, recs)
	assert.Equal(t, 90, s.Workers[0].Requests)
	assert.Equal(t, 10, s.Workers[1].Requests)
	assert.Equal(t, 0.9, s.Workers[0].Share)
	require.Len(t, s.Balance, 1)
	b := s.Balance[0]
	assert.Equal(t, 2.7, b.Imbalance)
	assert.True(t, b.Warn)
	require.Len(t, s.Warnings, 1)
	assert.Contains(t, s.Warnings[0], "fused worker w0 served 90.0% of the 100 fused requests")

	// Even: quiet.
	for i := range recs {
		recs[i].D = []string{"w0", "w1", "w2"}[i%3]
	}
	s = metrics.Summarize(recs)
	metrics.AttachWorkers(&s, ws, recs)
	assert.False(t, s.Balance[0].Warn)
	assert.Empty(t, s.Warnings)
}

func TestInstancesPlanBounded(t *testing.T) {
	iv, rows, wid := metrics.InstancesPlan(4, time.Second, 10*time.Second)
	assert.Equal(t, time.Second, iv)
	assert.Equal(t, 44, rows)
	assert.False(t, wid)
	// 100 workers for 100 emulated days at 10 ms: 86 G rows unbounded.
	iv, rows, wid = metrics.InstancesPlan(100, 10*time.Millisecond, 100*24*time.Hour)
	assert.True(t, wid)
	assert.LessOrEqual(t, rows, metrics.MaxInstanceRows)
	assert.Zero(t, iv%(10*time.Millisecond), "a whole multiple of the interval")
	end, less := 100*24*time.Hour, iv-10*time.Millisecond
	worse := int((end+less-1)/less+1) * 100
	assert.Greater(t, worse, metrics.MaxInstanceRows, "the smallest multiple that fits")
}

func TestLinksAndRouterWindows(t *testing.T) {
	r := metrics.NewLinkRecorder()
	p0, p1 := r.NIC("p0/nic0", 25e9), r.NIC("p1/nic0", 0)
	r.Link(0, p0, 1000, 25e9, 1)
	r.Link(0, p0, 2000, 25e9, 2) // same instant: replaces
	r.Link(time.Millisecond, p0, 2000, 25e9, 2)
	r.Link(2*time.Millisecond, p0, 0, 0, 0)
	r.Link(time.Millisecond, p1, 10, 1e9, 1)
	var b bytes.Buffer
	require.NoError(t, metrics.WriteLinks(&b, r))
	assert.Equal(t, "t_ms,nic,bytes_in_flight,rate_gbps,active_transfers,utilisation\n"+
		"0.000,p0/nic0,2000,200.000,2,1.0000\n"+
		"1.000,p1/nic0,10,8.000,1,\n"+
		"2.000,p0/nic0,0,0.000,0,0.0000\n", b.String())
	b.Reset()
	require.NoError(t, metrics.WriteLinks(&b, nil))
	assert.Equal(t, "t_ms,nic,bytes_in_flight,rate_gbps,active_transfers,utilisation\n", b.String())

	recs := []metrics.Record{
		{ID: 0, Arrival: 0, Mode: "Direct"}, {ID: 1, Arrival: 500 * time.Millisecond, Mode: "Seed"},
		{ID: 2, Arrival: 2500 * time.Millisecond, Mode: "Direct", Failed: true},
	}
	ev := metrics.NewRouterRecorder()
	ev.Event(100*time.Millisecond, metrics.RouterRejection)
	ev.Event(1200*time.Millisecond, metrics.RouterMigration)
	b.Reset()
	require.NoError(t, metrics.WriteRouterWindows(&b, recs, ev, time.Second))
	assert.Equal(t, strings.Join(metrics.RouterWindowsHeader, ",")+"\n"+
		"0.000,1000.000,2,1,0,0,0,1,0.5000\n"+
		"1000.000,1000.000,0,0,1,0,0,0,\n"+
		"2000.000,1000.000,1,0,0,0,0,0,0.0000\n", b.String())
	assert.Equal(t, time.Second, metrics.RouterWindow(time.Hour))
	assert.Equal(t, 2*time.Second, metrics.RouterWindow(150000*time.Second))
}

func TestJudgeWall(t *testing.T) {
	late := []time.Duration{100 * time.Microsecond, 200 * time.Microsecond, time.Millisecond}
	var c metrics.Clock
	// Scale 1: 1 ms late against a 100 ms TTFT p50 (bound 5 ms): ok.
	metrics.JudgeWall(&c, late, 1, 0.1, 100)
	assert.Equal(t, metrics.FidelityOK, c.Fidelity)
	assert.Equal(t, 1.0, c.EmulatedLateness.P99)
	assert.Empty(t, metrics.WallWarning(c))
	// Scale 1000: 1 s emulated: distorted.
	metrics.JudgeWall(&c, late, 1000, 0.1, 100)
	assert.Equal(t, metrics.FidelityDistorted, c.Fidelity)
	assert.Equal(t, 1000.0, c.EmulatedLateness.P99)
	assert.Equal(t, 1.0, c.Lateness.P99, "real lateness stays in real ms")
	// Saturated: distorted even when timers are on time.
	metrics.JudgeWall(&c, late, 1, 0.8, 100)
	assert.Equal(t, metrics.FidelityDistorted, c.Fidelity)
	c.TimeScale = 1
	assert.Contains(t, metrics.WallWarning(c), "saturated 80% of the time")
	assert.Error(t, metrics.StrictWall(metrics.Summary{Clock: c}))
}

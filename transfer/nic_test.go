package transfer_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/transfer"
)

func TestNewNICValidates(t *testing.T) {
	good := transfer.Config{Name: "p0/mlx5_0", Transport: transfer.RDMA, LineRate: 25e9}
	_, err := transfer.NewNIC(good)
	require.NoError(t, err)

	for name, mut := range map[string]func(*transfer.Config){
		"unknown transport": func(c *transfer.Config) { c.Transport = "udp" },
		"empty transport":   func(c *transfer.Config) { c.Transport = "" },
		"zero line rate":    func(c *transfer.Config) { c.LineRate = 0 },
		"negative rate":     func(c *transfer.Config) { c.LineRate = -1 },
		"NaN line rate":     func(c *transfer.Config) { c.LineRate = math.NaN() },
		"inf line rate":     func(c *transfer.Config) { c.LineRate = math.Inf(1) },
		"negative latency":  func(c *transfer.Config) { c.Latency = -time.Nanosecond },
		"negative setup":    func(c *transfer.Config) { c.Setup = -time.Nanosecond },
		"efficiency > 1":    func(c *transfer.Config) { c.Efficiency = 1.5 },
		"efficiency < 0":    func(c *transfer.Config) { c.Efficiency = -0.1 },
		"NaN efficiency":    func(c *transfer.Config) { c.Efficiency = math.NaN() },
		"negative max rate": func(c *transfer.Config) { c.MaxRate = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			c := good
			mut(&c)
			_, err := transfer.NewNIC(c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `"p0/mlx5_0"`)
			assert.Panics(t, func() { transfer.Estimate(c, 1) })
		})
	}
}

func TestDefaults(t *testing.T) {
	assert.Equal(t, 0.87, transfer.DefaultEfficiency(transfer.RDMA))
	assert.Equal(t, 0.33, transfer.DefaultEfficiency(transfer.TCP))
	assert.Zero(t, transfer.DefaultEfficiency("udp"))
	assert.Zero(t, transfer.DefaultMaxRate("udp"))
	assert.Zero(t, transfer.DefaultSetup("udp"))

	n := newNIC(t, transfer.Config{Transport: transfer.RDMA, LineRate: 12.5e9})
	c := n.Config()
	assert.Equal(t, 0.87, c.Efficiency)
	assert.Equal(t, 400*time.Microsecond, c.Setup)
	assert.Equal(t, 20e9, c.MaxRate)
	// 100 Gb/s: efficiency binds (10.875 GB/s); 400 Gb/s: the ceiling does.
	assert.InDelta(t, 10.875e9, n.Bandwidth(), 1)
	assert.Equal(t, 20e9, transfer.Config{Transport: transfer.RDMA, LineRate: 50e9}.EffectiveRate())
	assert.Equal(t, 50e9, transfer.Config{Transport: transfer.RDMA, LineRate: 50e9, Efficiency: 1, MaxRate: math.Inf(1)}.EffectiveRate())
}

func TestSingleTransferMatchesEstimate(t *testing.T) {
	for _, cfg := range []transfer.Config{
		ideal(),
		{Transport: transfer.RDMA, LineRate: 25e9, Latency: 5 * time.Microsecond},
		{Transport: transfer.TCP, LineRate: 25e9, Latency: 50 * time.Microsecond},
	} {
		for _, b := range []int64{0, 1, 999, 20e6, 4_915_200_000} {
			n := newNIC(t, cfg)
			n.Start(7, 42, b, 0)
			at, ok := n.NextEvent()
			require.True(t, ok)
			var out []transfer.Completion
			for {
				out = adv(n, at, out)
				if len(out) > 0 {
					break
				}
				at, ok = n.NextEvent()
				require.True(t, ok)
			}
			require.Len(t, out, 1)
			assert.Equal(t, transfer.Completion{ID: 42, At: 7 + transfer.Estimate(cfg, b)}, out[0])
			assert.Equal(t, transfer.Estimate(cfg, b), n.Estimate(b))
			assert.Zero(t, n.Active())
			_, ok = n.NextEvent()
			assert.False(t, ok)
		}
	}
	// Estimate = fixed + ceil(bytes / rate).
	assert.Equal(t, time.Nanosecond+1000, transfer.Estimate(ideal(), 1000))
}

func TestProcessorSharing(t *testing.T) {
	fixed1000, slow := ideal(), ideal()
	fixed1000.Latency = 999 * time.Nanosecond // fixed cost 1000 ns
	slow.LineRate = 0.3e9
	for _, tc := range []struct {
		name string
		cfg  transfer.Config
		jobs []job
		want []transfer.Completion
	}{
		{"two equal transfers share evenly", ideal(),
			[]job{{0, 1, 1000, 0}, {0, 2, 1000, 0}}, []transfer.Completion{{ID: 1, At: 2001}, {ID: 2, At: 2001}}},
		// A alone on [1, 502): 501 B; then 0.5 B/ns each: A's last 499 B take
		// 998 ns (done at 1500); B then has 501 B left alone: 2001.
		{"late joiner slows the first", ideal(),
			[]job{{0, 1, 1000, 0}, {501, 2, 1000, 0}}, []transfer.Completion{{ID: 1, At: 1500}, {ID: 2, At: 2001}}},
		// B is in its fixed phase until 1900, by which time A (joined 1000)
		// has 100 B left: A done at 1900+200, B then alone.
		{"fixed phase uses no bandwidth", fixed1000,
			[]job{{0, 1, 1000, 0}, {900, 2, 1000, 0}}, []transfer.Completion{{ID: 1, At: 2100}, {ID: 2, At: 3000}}},
		// 1 B/ns shared by A capped at 0.2 B/ns and two uncapped: 0.2/0.4/0.4.
		// All of A, B done at 1+1000; C has 400 B left alone: 1401.
		{"water-filling gives capped transfers their cap", ideal(),
			[]job{{0, 1, 200, 0.2e9}, {0, 2, 400, 0}, {0, 3, 800, 0}},
			[]transfer.Completion{{ID: 1, At: 1001}, {ID: 2, At: 1001}, {ID: 3, At: 1401}}},
		{"cap above the share is not binding", ideal(),
			[]job{{0, 1, 1000, 0.9e9}, {0, 2, 1000, 0}}, []transfer.Completion{{ID: 1, At: 2001}, {ID: 2, At: 2001}}},
		{"all capped below capacity", ideal(),
			[]job{{0, 1, 100, 0.1e9}, {0, 2, 100, 0.2e9}}, []transfer.Completion{{ID: 2, At: 501}, {ID: 1, At: 1001}}},
		// 1 B at 0.3 B/ns = 3.33 ns -> 4 ns, plus the 1 ns fixed cost.
		{"completion times are rounded up", slow, []job{{0, 1, 1, 0}}, []transfer.Completion{{ID: 1, At: 1 + 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, simulate(t, tc.cfg, tc.jobs, nil, 0))
		})
	}
}

func TestCompletionOrderAndPending(t *testing.T) {
	n := newNIC(t, ideal())
	n.Start(0, 9, 100, 0)
	n.Start(0, 3, 100, 0)
	n.Start(0, 5, 10, 0)
	assert.Equal(t, 3, n.Active())
	// Start at 1000 catches up: 5 done at 31, 3 and 9 at 1+30+180=211.
	n.Start(1000, 1, 0, 0)
	at, ok := n.NextEvent()
	require.True(t, ok)
	assert.Equal(t, time.Duration(1000), at, "pending completions are collectable now")
	assert.Equal(t, 1, n.Active())
	out := adv(n, 1000, nil)
	assert.Equal(t, []transfer.Completion{{ID: 5, At: 31}, {ID: 3, At: 211}, {ID: 9, At: 211}}, out)
	at, ok = n.NextEvent()
	require.True(t, ok)
	assert.Equal(t, time.Duration(1001), at)
	out = adv(n, 5000, out[:0])
	assert.Equal(t, []transfer.Completion{{ID: 1, At: 1001}}, out)
	// ids may be reused once finished, even when the finish is only
	// discovered by this Start's catch-up.
	n.Start(5000, 1, 0, 0)
	assert.Equal(t, 1, n.Active())
	n.Start(5001, 1, 7, 0) // id 1 finished at 5001
	out = adv(n, 5001, out[:0])
	assert.Equal(t, []transfer.Completion{{ID: 1, At: 5001}}, out)
	assert.Equal(t, 1, n.Active())
}

func TestAdvanceBetweenEventsChangesNothing(t *testing.T) {
	jobs := []job{{0, 1, 1_000_000, 0}, {3333, 2, 777_777, 0.3e9}, {90_001, 3, 123_456, 0}, {90_001, 4, 0, 0}}
	events := []event{{500_000, 0.5}, {700_000, -1}}
	want := simulate(t, ideal(), jobs, events, 0)
	for _, step := range []time.Duration{7, 1000, 12345, 99_999} {
		assert.Equal(t, want, simulate(t, ideal(), jobs, events, step), "step %v", step)
	}
}

func TestDegrade(t *testing.T) {
	// 1000 B at 1 B/ns from 1; halved at 501: 500 B left at 0.5 -> 1501.
	got := simulate(t, ideal(), []job{{0, 1, 1000, 0}}, []event{{501, 0.5}}, 0)
	assert.Equal(t, []transfer.Completion{{ID: 1, At: 1501}}, got)
	// Degradations compound: 0.5 then 0.5 at 1001: 250 B left at 0.25 -> 2001.
	got = simulate(t, ideal(), []job{{0, 1, 1000, 0}}, []event{{501, 0.5}, {1001, 0.5}}, 0)
	assert.Equal(t, []transfer.Completion{{ID: 1, At: 2001}}, got)
	// Restore brings full rate back: 0.5 on [501,1001): 250 B; 250 B at 1 -> 1251.
	got = simulate(t, ideal(), []job{{0, 1, 1000, 0}}, []event{{501, 0.5}, {1001, -1}}, 0)
	assert.Equal(t, []transfer.Completion{{ID: 1, At: 1251}}, got)

	n := newNIC(t, ideal())
	n.Degrade(10, 0.25)
	at, ok := n.NextEvent()
	assert.True(t, ok)
	assert.Equal(t, time.Duration(10), at)
	adv(n, 10, nil)
	assert.Equal(t, 0.25e9, n.Bandwidth())
	assert.Panics(t, func() { n.Degrade(10, 0) })
	assert.Panics(t, func() { n.Degrade(10, 1.5) })
	assert.Panics(t, func() { n.Degrade(9, 0.5) })
}

func TestCut(t *testing.T) {
	cfg := ideal()
	cfg.Name = "p0/mlx5_0"
	jobs := []job{
		{0, 1, 100, 0},   // done before the cut
		{0, 2, 1000, 0},  // in the pool at the cut
		{0, 3, 399, 0},   // in the pool at the cut
		{499, 4, 10, 0},  // joins the pool exactly at the cut
		{500, 5, 10, 0},  // starts exactly at the cut: fails at once
		{800, 6, 10, 0},  // starts while cut: fails at its start
		{1200, 7, 10, 0}, // after Restore: succeeds
		{1200, 8, 10, 0}, // same
	}
	got := simulate(t, cfg, jobs, []event{{500, 0}, {1200, -1}}, 0)
	for _, c := range got {
		if c.Err != nil {
			assert.ErrorIs(t, c.Err, transfer.ErrCut)
			var ce *transfer.CutError
			require.True(t, errors.As(c.Err, &ce))
			assert.Equal(t, "p0/mlx5_0", ce.NIC)
			assert.Contains(t, c.Err.Error(), "p0/mlx5_0")
		}
	}
	byID := map[uint64]transfer.Completion{}
	for _, c := range got {
		byID[c.ID] = c
	}
	// 1,2,3 share 1/3 B/ns from 1: 1 done at 301; 2,3 at 0.5: 3 has 299 B
	// left -> 301+598 = 899 > 500, so 3 fails too.
	assert.Equal(t, transfer.Completion{ID: 1, At: 301}, byID[1])
	for _, id := range []uint64{2, 3, 4, 5} {
		assert.Equal(t, time.Duration(500), byID[id].At, "id %d", id)
		assert.ErrorIs(t, byID[id].Err, transfer.ErrCut, "id %d", id)
	}
	assert.Equal(t, time.Duration(800), byID[6].At)
	assert.ErrorIs(t, byID[6].Err, transfer.ErrCut)
	assert.Equal(t, transfer.Completion{ID: 7, At: 1221}, byID[7])
	assert.Equal(t, transfer.Completion{ID: 8, At: 1221}, byID[8])
}

func TestCutInFixedPhaseAndExactBoundary(t *testing.T) {
	cfg := ideal()
	cfg.Latency = 99 * time.Nanosecond // fixed 100 ns
	n := newNIC(t, cfg)
	n.Start(0, 1, 100, 0) // done exactly at 200
	n.Start(150, 2, 100, 0)
	n.Cut(200)
	out := adv(n, 1000, nil)
	require.Len(t, out, 2)
	assert.Equal(t, transfer.Completion{ID: 1, At: 200}, out[0], "due exactly at the cut: succeeds")
	assert.Equal(t, uint64(2), out[1].ID)
	assert.Equal(t, time.Duration(200), out[1].At, "in fixed phase at the cut: fails")
	assert.ErrorIs(t, out[1].Err, transfer.ErrCut)
	assert.Zero(t, n.Bandwidth())
	_, ok := n.NextEvent()
	assert.False(t, ok)
}

func TestStartPanics(t *testing.T) {
	n := newNIC(t, ideal())
	n.Start(10, 1, 100, 0)
	assert.Panics(t, func() { n.Start(10, 1, 5, 0) }, "duplicate active id")
	assert.Panics(t, func() { n.Start(9, 2, 5, 0) }, "time going backwards")
	assert.Panics(t, func() { n.Start(10, 2, -1, 0) }, "negative bytes")
	assert.Panics(t, func() { n.Start(10, 2, 1, -1) }, "negative cap")
	assert.Panics(t, func() { n.Start(10, 2, 1, math.NaN()) }, "NaN cap")
	assert.Panics(t, func() { adv(n, 9, nil) })
	assert.Panics(t, func() { n.Cut(9) })
	assert.Panics(t, func() { n.Restore(9) })
	n.Start(10, 3, 1, math.Inf(1)) // +Inf = no cap
}

func TestAdvanceDoesNotAllocate(t *testing.T) {
	n := newNIC(t, ideal())
	out := make([]transfer.Completion, 0, 64)
	var now time.Duration
	id := uint64(0)
	for ; id < 16; id++ {
		n.Start(0, id, int64(1000+id*37), float64(id%3)*0.1e9)
	}
	allocs := testing.AllocsPerRun(200, func() {
		at, ok := n.NextEvent()
		if !ok {
			return
		}
		now = at
		out = adv(n, now, out[:0])
		for range out {
			n.Start(now, id, int64(1000+id%97), float64(id%3)*0.1e9)
			id++
		}
	})
	assert.Zero(t, allocs)
}

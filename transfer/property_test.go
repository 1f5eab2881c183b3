package transfer_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stretchr/testify/assert"

	"github.com/pdemu/pdemu/transfer"
)

// genConfig draws a valid NIC config: both transports, 100–400 Gb/s or a
// slow 1 GB/s link, default or explicit efficiency/setup/ceiling.
func genConfig(t *rapid.T) transfer.Config {
	c := transfer.Config{
		Name:      "p0/mlx5_0",
		Transport: rapid.SampledFrom([]transfer.Transport{transfer.RDMA, transfer.TCP}).Draw(t, "transport"),
		LineRate:  rapid.SampledFrom([]float64{1e9, 12.5e9, 25e9, 50e9}).Draw(t, "lineRate"),
		Latency:   time.Duration(rapid.Int64Range(0, 10_000).Draw(t, "latency")),
	}
	if rapid.Bool().Draw(t, "explicit") {
		c.Efficiency = rapid.Float64Range(0.05, 1).Draw(t, "efficiency")
		c.Setup = time.Duration(rapid.Int64Range(1, 1_000_000).Draw(t, "setup"))
		c.MaxRate = rapid.SampledFrom([]float64{0, math.Inf(1), 3e9}).Draw(t, "maxRate")
	}
	return c
}

// genJobs draws 1–12 transfers with distinct ids (not in start order).
// "Round" scenarios use round sizes, times and caps so that exact
// completion times land on whole nanoseconds, where floating-point noise
// and rounding up would show.
func genJobs(t *rapid.T) []job {
	n := rapid.IntRange(1, 12).Draw(t, "n")
	round := rapid.Bool().Draw(t, "round")
	jobs := make([]job, n)
	for i := range jobs {
		jobs[i].id = uint64(i) * 3 // gaps so tests can add ids
		if round {
			jobs[i].at = time.Duration(rapid.Int64Range(0, 20).Draw(t, "at")) * 1000
			jobs[i].bytes = rapid.Int64Range(0, 100).Draw(t, "bytes") * 1000
			jobs[i].cap = rapid.SampledFrom([]float64{0, 1e8, 2e8, 2.5e8, 5e8, 1e9}).Draw(t, "cap")
			continue
		}
		jobs[i].at = time.Duration(rapid.Int64Range(0, 2_000_000).Draw(t, "at"))
		jobs[i].bytes = rapid.Int64Range(0, 50_000_000).Draw(t, "bytes")
		if rapid.Bool().Draw(t, "capped") {
			jobs[i].cap = rapid.Float64Range(1e7, 5e10).Draw(t, "cap")
		}
	}
	return jobs
}

// genDegrades draws 0–3 degradations (and maybe a restore).
func genDegrades(t *rapid.T) []event {
	var evs []event
	for range rapid.IntRange(0, 3).Draw(t, "degrades") {
		evs = append(evs, event{
			at:     time.Duration(rapid.Int64Range(0, 3_000_000).Draw(t, "degradeAt")),
			factor: rapid.Float64Range(0.05, 1).Draw(t, "factor"),
		})
	}
	if rapid.Bool().Draw(t, "restore") {
		evs = append(evs, event{at: time.Duration(rapid.Int64Range(0, 3_000_000).Draw(t, "restoreAt")), factor: -1})
	}
	return evs
}

// checkAllAtLeast checks that every id of base finishes no sooner in mod.
func checkAllAtLeast(t *rapid.T, base, mod []transfer.Completion) {
	t.Helper()
	after := finishTimes(mod)
	for _, c := range base {
		if got, ok := after[c.ID]; !ok || got < c.At {
			t.Fatalf("transfer %d finished at %v, before %v in the baseline", c.ID, got, c.At)
		}
	}
}

// More bytes on one transfer never make it — or any other — finish sooner.
func TestPropMoreBytesNeverSooner(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, jobs, evs := genConfig(t), genJobs(t), genDegrades(t)
		base := simulate(t, cfg, jobs, evs, 0)
		more := slices.Clone(jobs)
		j := rapid.IntRange(0, len(jobs)-1).Draw(t, "j")
		more[j].bytes += rapid.Int64Range(1, 10_000_000).Draw(t, "extra")
		checkAllAtLeast(t, base, simulate(t, cfg, more, evs, 0))
	})
}

// Adding concurrent transfers never makes a given transfer finish sooner.
func TestPropMoreTransfersNeverSooner(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, jobs, evs := genConfig(t), genJobs(t), genDegrades(t)
		base := simulate(t, cfg, jobs, evs, 0)
		more := slices.Clone(jobs)
		for i := range rapid.IntRange(1, 4).Draw(t, "added") {
			x := job{
				at:    time.Duration(rapid.Int64Range(0, 2_000_000).Draw(t, "addAt")),
				id:    uint64(i)*3 + 1 + 1000,
				bytes: rapid.Int64Range(0, 50_000_000).Draw(t, "addBytes"),
			}
			if rapid.Bool().Draw(t, "addCapped") {
				x.cap = rapid.Float64Range(1e7, 5e10).Draw(t, "addCap")
			}
			more = append(more, x)
		}
		checkAllAtLeast(t, base, simulate(t, cfg, more, evs, 0))
	})
}

// Bytes delivered by time t never exceed the effective bandwidth times the
// time the pool can have been busy (t - first start - fixed cost).
func TestPropBandwidthBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, jobs := genConfig(t), genJobs(t)
		var evs []event
		if rapid.Bool().Draw(t, "degraded") {
			evs = genDegrades(t)
		}
		out := simulate(t, cfg, jobs, evs, 0)
		size := map[uint64]int64{}
		first := jobs[0].at
		for _, j := range jobs {
			size[j.id] = j.bytes
			first = min(first, j.at)
		}
		bw, fixed := cfg.EffectiveRate(), cfg.FixedCost()
		var delivered float64
		for _, c := range out {
			delivered += float64(size[c.ID])
			busy := max(0, (c.At - first - fixed).Seconds())
			if limit := bw*busy*(1+1e-9) + 1e-3; delivered > limit {
				t.Fatalf("by %v delivered %.0f B > %.0f B (bandwidth %g B/s)", c.At, delivered, limit, bw)
			}
		}
	})
}

// A cut fails every transfer in flight at the cut time, fails later starts
// at their start time, and leaves earlier completions untouched.
func TestPropCutFailsInFlight(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, jobs := genConfig(t), genJobs(t)
		cut := time.Duration(rapid.Int64Range(0, 3_000_000).Draw(t, "cut"))
		base := finishTimes(simulate(t, cfg, jobs, nil, 0))
		out := simulate(t, cfg, jobs, []event{{cut, 0}}, 0)
		if len(out) != len(jobs) {
			t.Fatalf("%d completions for %d jobs", len(out), len(jobs))
		}
		got := map[uint64]transfer.Completion{}
		for _, c := range out {
			got[c.ID] = c
		}
		for _, j := range jobs {
			c := got[j.id]
			switch {
			case j.at >= cut:
				if c.At != j.at || c.Err == nil {
					t.Fatalf("job %d started at %v after the cut at %v: got %+v", j.id, j.at, cut, c)
				}
			case base[j.id] <= cut:
				if c.At != base[j.id] || c.Err != nil {
					t.Fatalf("job %d done at %v before the cut at %v: got %+v", j.id, base[j.id], cut, c)
				}
			default:
				if c.At != cut || c.Err == nil {
					t.Fatalf("job %d in flight at the cut %v: got %+v", j.id, cut, c)
				}
				assert.ErrorIs(t, c.Err, transfer.ErrCut)
			}
		}
	})
}

// Same inputs give identical completions, whatever the order of Starts at
// the same instant and however often Advance is called in between.
func TestPropDeterminism(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, jobs, evs := genConfig(t), genJobs(t), genDegrades(t)
		if rapid.Bool().Draw(t, "sameStart") {
			for i := range jobs {
				jobs[i].at = 0
			}
		}
		if rapid.Bool().Draw(t, "cut") {
			evs = append(evs, event{at: time.Duration(rapid.Int64Range(0, 3_000_000).Draw(t, "cutAt"))})
		}
		want := simulate(t, cfg, jobs, evs, 0)
		if len(want) != len(jobs) {
			t.Fatalf("%d completions for %d jobs", len(want), len(jobs))
		}
		// Each Advance returns (At, ID) order; across calls At never
		// decreases (a Start at an instant already advanced to is reported
		// by the next call).
		for i := 1; i < len(want); i++ {
			if a, b := want[i-1], want[i]; a.At > b.At {
				t.Fatalf("completions out of time order: %+v then %+v", a, b)
			}
		}
		assert.Equal(t, want, simulate(t, cfg, jobs, evs, 0), "rerun")
		perm := rapid.Permutation(jobs).Draw(t, "perm")
		assert.Equal(t, want, simulate(t, cfg, perm, evs, 0), "permuted Start order")
		end := want[len(want)-1].At
		for _, e := range evs {
			end = max(end, e.at)
		}
		step := max(1, end/time.Duration(rapid.IntRange(2, 500).Draw(t, "steps")))
		assert.Equal(t, want, simulate(t, cfg, jobs, evs, step), "Advance every %v", step)
	})
}

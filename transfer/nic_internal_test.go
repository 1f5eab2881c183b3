package transfer

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// checkShares verifies the max-min fair (water-filling) allocation of the
// pool: no share exceeds its cap, the shares never exceed the bandwidth,
// every member not held at its cap gets the same (largest) share, and the
// bandwidth is fully used unless every member is at its cap.
func checkShares(t *rapid.T, n *NIC) {
	t.Helper()
	bw := n.Bandwidth()
	var sum, level float64
	k := 0
	for _, x := range n.xs {
		if !x.pooled {
			continue
		}
		k++
		sum += x.rate
		level = max(level, x.rate)
		if !(x.rate > 0) || x.rate > x.cap*(1+1e-12) {
			t.Fatalf("transfer %d: rate %g, cap %g", x.id, x.rate, x.cap)
		}
	}
	if k == 0 {
		return
	}
	if sum > bw*(1+1e-9) {
		t.Fatalf("shares sum to %g > bandwidth %g", sum, bw)
	}
	allCapped := true
	for _, x := range n.xs {
		if !x.pooled {
			continue
		}
		atCap := math.Abs(x.rate-x.cap) <= 1e-9*x.cap
		if !atCap {
			allCapped = false
			if math.Abs(x.rate-level) > 1e-9*level {
				t.Fatalf("transfer %d below its cap gets %g, others %g", x.id, x.rate, level)
			}
		}
	}
	if !allCapped && sum < bw*(1-1e-9) {
		t.Fatalf("bandwidth %g not fully shared (%g) although some member is not capped", bw, sum)
	}
	for _, x := range n.xs {
		if x.pooled && x.finishAt < n.now {
			t.Fatalf("transfer %d predicted to finish at %v, before now %v", x.id, x.finishAt, n.now)
		}
	}
}

// TestWaterFillingInvariant drives a NIC with random Starts, Advances and
// degradations and checks the sharing after every step.
func TestWaterFillingInvariant(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n, err := NewNIC(Config{
			Name: "x", Transport: RDMA, LineRate: rapid.SampledFrom([]float64{1e9, 25e9}).Draw(t, "line"),
			Efficiency: 1, Setup: time.Duration(rapid.Int64Range(1, 1000).Draw(t, "setup")), MaxRate: math.Inf(1),
		})
		if err != nil {
			t.Fatal(err)
		}
		var now time.Duration
		var id uint64
		var out []Completion
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			now += time.Duration(rapid.Int64Range(0, 5000).Draw(t, "dt"))
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1, 2:
				capRate := 0.0
				if rapid.Bool().Draw(t, "capped") {
					capRate = rapid.Float64Range(1e6, 2e10).Draw(t, "cap")
				}
				n.Start(now, id, rapid.Int64Range(0, 1_000_000).Draw(t, "bytes"), capRate)
				id++
			case 3:
				n.Degrade(now, rapid.Float64Range(0.1, 1).Draw(t, "factor"))
				out = adv(n, now, out[:0])
			case 4:
				n.Restore(now)
				out = adv(n, now, out[:0])
			case 5:
				if at, ok := n.NextEvent(); ok {
					now = max(now, at)
				}
				out = adv(n, now, out[:0])
			}
			checkShares(t, n)
		}
	})
}

func TestCeilNs(t *testing.T) {
	for _, c := range []struct {
		rem, rate float64
		want      time.Duration
	}{
		{0, 1e9, 0},
		{-1, 1e9, 0},
		{1, 0, never},
		{1, 1e9, 1},
		{1.5, 1e9, 2},
		{10, 1e9 / 3, 30}, // 30.000000000000004 in floating point
		{1e30, 1, never},
	} {
		if got := ceilNs(c.rem, c.rate); got != c.want {
			t.Errorf("ceilNs(%g, %g) = %v, want %v", c.rem, c.rate, got, c.want)
		}
	}
	if addSat(never-1, 2) != never || addSat(1, never) != never || addSat(1, 2) != 3 {
		t.Error("addSat")
	}
}

// TestSmallerShareNeverFinishesEarlier exercises the guard in reshare with
// a state floating-point noise could produce: a prediction later than what
// the remaining bytes at the lower rate imply.
func TestSmallerShareNeverFinishesEarlier(t *testing.T) {
	n, err := NewNIC(Config{Transport: RDMA, LineRate: 1e9, Efficiency: 1, Setup: 1, MaxRate: math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	n.xs = []xfer{{id: 1, cap: math.Inf(1), pooled: true, remaining: 100, rate: 2e9, finishAt: 500}}
	n.reshare() // 1 B/ns: 100 ns from t=0, but 500 was promised
	if x := n.xs[0]; x.rate != 1e9 || x.finishAt != 500 {
		t.Fatalf("rate %g finish %v, want 1e9 and 500", x.rate, x.finishAt)
	}
	n.xs[0].rate, n.xs[0].finishAt = 0.5e9, 500
	n.reshare() // a larger share may finish earlier
	if x := n.xs[0]; x.finishAt != 100 {
		t.Fatalf("finish %v, want 100", x.finishAt)
	}
}

// adv advances n to at and appends what ended to out.
func adv(n *NIC, at time.Duration, out []Completion) []Completion {
	n.Advance(at)
	return append(out, n.Ready().Out...)
}

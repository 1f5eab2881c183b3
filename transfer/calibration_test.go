package transfer_test

// Calibration of the transport defaults against published figures. All
// figures use ONE set of defaults (DefaultEfficiency, DefaultMaxRate,
// DefaultSetup) plus Latency = 5 µs (RoCE/TCP within a rack: propagation,
// switch and doorbell). Run `go test -v -run Calibration ./transfer/` for
// the table.
//
// Sources (see shared/DESIGN.md §4, "Sourced constants"):
//   - Mooncake paper (FAST'25), transfer engine microbenchmark: 40 GB at
//     87 GB/s over 4×200 Gb/s RoCE and 190 GB/s over 8×400 Gb/s; TE is 2.4×
//     / 4.6× faster than TCP on those setups.
//   - Mooncake vLLM PD integration doc, 8×ConnectX-7 (400 Gb/s each): 20 MB
//     in 0.54 ms, 1.13 GB in 8.84 ms, 4.5 GB in 31.65 ms.
//   - KVC-Router write-up (shared/seeds/000_*, §future work 3): reseed
//     transfer over TCP loopback 1.5–4 s; RDMA on mlx5_0 @ 200 Gb/s "would
//     compress it to ~200 ms".
//
// Modelling choice for multi-NIC setups: N separate NICs, the bytes split
// evenly, the transfer done when the slowest stripe is (the per-NIC
// MaxRate ceiling makes "one N×line-rate aggregate NIC" wrong: it would cap
// the aggregate at one NIC's host path).

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/transfer"
)

const (
	gbps200 = 25e9 // 200 Gb/s in bytes/s (ConnectX-6)
	gbps400 = 50e9 // 400 Gb/s in bytes/s (ConnectX-7)
	rackLat = 5 * time.Microsecond

	// qwen3-coder-30b-a3b: 48 layers · 4 KV heads · 128 head_dim · 2 (K,V)
	// · 2 bytes (bf16).
	qwen3CoderKVBytesPerToken = 48 * 4 * 128 * 2 * 2
)

// striped moves total bytes over nics NICs of cfg in parallel (total split
// evenly, one transfer per NIC, all started at 0) and returns when the last
// stripe completes, driving real NICs event by event.
func striped(t tb, cfg transfer.Config, nics int, total int64) time.Duration {
	t.Helper()
	var end time.Duration
	per := total / int64(nics)
	for i := range nics {
		b := per
		if i == nics-1 {
			b = total - per*int64(nics-1)
		}
		c := cfg
		c.Name = fmt.Sprintf("nic%d", i)
		out := simulate(t, c, []job{{0, uint64(i), b, 0}}, nil, 0)
		require.Len(t, out, 1)
		require.NoError(t, out[0].Err)
		end = max(end, out[0].At)
	}
	return end
}

// within checks |got/want - 1| <= tol and logs the figure.
func within(t *testing.T, what string, got, want, tol float64, unit string) {
	t.Helper()
	dev := got/want - 1
	t.Logf("%-48s model %10.4g %-5s target %10.4g (%+5.1f%%, tol ±%.0f%%)", what, got, unit, want, 100*dev, 100*tol)
	if math.Abs(dev) > tol {
		t.Errorf("%s: model %g %s deviates %+.1f%% from target %g (tolerance ±%.0f%%)", what, got, unit, 100*dev, want, 100*tol)
	}
}

func TestCalibrationMooncakeTE(t *testing.T) {
	rdma := transfer.Config{Transport: transfer.RDMA, LineRate: gbps200, Latency: rackLat}
	tcp := transfer.Config{Transport: transfer.TCP, LineRate: gbps200, Latency: rackLat}
	const total = 40e9

	// 4×200 Gb/s RoCE, 40 GB split 10 GB per NIC.
	tr := striped(t, rdma, 4, total)
	within(t, "TE 40 GB, 4×200G RDMA throughput", total/tr.Seconds()/1e9, 87, 0.25, "GB/s")
	tt := striped(t, tcp, 4, total)
	within(t, "TE 40 GB, 4×200G TCP/RDMA time ratio", tt.Seconds()/tr.Seconds(), 2.4, 0.25, "×")

	// 8×400 Gb/s (not a requirement of the brief, but the same defaults
	// should land near it): the 20 GB/s per-NIC ceiling gives 160 GB/s.
	tr8 := striped(t, withLineRate(rdma, gbps400), 8, total)
	within(t, "TE 40 GB, 8×400G RDMA throughput", total/tr8.Seconds()/1e9, 190, 0.25, "GB/s")
	// TCP 4.6× slower on 8×400G is NOT reproduced: TCP there is host-CPU
	// bound across all NICs (41 GB/s total), which a per-NIC model cannot
	// express; the model keeps ≈ 2.4×. Logged only.
	tt8 := striped(t, withLineRate(tcp, gbps400), 8, total)
	t.Logf("%-48s model %10.4g %-5s target %10.4g (not asserted: per-host CPU bound not modelled)",
		"TE 40 GB, 8×400G TCP/RDMA time ratio", tt8.Seconds()/tr8.Seconds(), "×", 4.6)
}

func TestCalibrationMooncakeVLLM(t *testing.T) {
	// 8×CX-7 in parallel (3.2 Tb/s aggregate), bytes split evenly.
	cfg := transfer.Config{Transport: transfer.RDMA, LineRate: gbps400, Latency: rackLat}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	within(t, "vLLM PD 20 MB, 8×400G", ms(striped(t, cfg, 8, 20e6)), 0.54, 0.25, "ms")
	within(t, "vLLM PD 1.13 GB, 8×400G", ms(striped(t, cfg, 8, 1.13e9)), 8.84, 0.25, "ms")
	within(t, "vLLM PD 4.5 GB, 8×400G", ms(striped(t, cfg, 8, 4.5e9)), 31.65, 0.25, "ms")
}

// TestCalibrationKVCReseed documents the reseed transfer of the KVC-Router
// evaluation: a 40k–60k-token agentic context of qwen3-coder-30b-a3b
// (98,304 B/token, so 3.9–5.9 GB).
//
// RDMA: one mlx5 @ 200 Gb/s with the defaults delivers 20 GB/s, so 50,000
// tokens (4.9152 GB) take exactly 246.165 ms (0.405 ms fixed + 245.76 ms);
// 40k → 197.0 ms, 60k → 295.3 ms: the "≈ 200 ms" of the paper, which is
// line rate (25 GB/s → 197 ms for 50k) minus real-world efficiency.
//
// TCP loopback: the 1.5–4 s the paper measured is not NIC- or kernel-bound
// (default TCP on a 200 Gb/s NIC would take 0.6 s for 50k tokens); it is
// the Python KV path of the TCP transport (per-layer tensor copies,
// serialisation, one stream) at 1.5–2 GB/s effective. Model it as a TCP
// NIC whose MaxRate is that path's rate (LineRate is nominal and does not
// bind):
//
//	transfer.Config{Name: "p0/lo", Transport: transfer.TCP, LineRate: 25e9, MaxRate: 1.5e9}
//
// which gives 2.62 / 3.28 / 3.93 s for 40k / 50k / 60k tokens (2.0 GB/s:
// 1.97 / 2.46 / 2.95 s). Equivalently Efficiency = 0.06 on LineRate 25e9.
func TestCalibrationKVCReseed(t *testing.T) {
	rdma := transfer.Config{Name: "p0/mlx5_0", Transport: transfer.RDMA, LineRate: gbps200, Latency: rackLat}
	bytes := func(tokens int64) int64 { return tokens * qwen3CoderKVBytesPerToken }
	if qwen3CoderKVBytesPerToken != 98_304 {
		t.Fatalf("kv bytes/token = %d", qwen3CoderKVBytesPerToken)
	}

	// Exactly, through a real NIC.
	got := simulate(t, rdma, []job{{0, 1, bytes(50_000), 0}}, nil, 0)
	assert.Equal(t, []transfer.Completion{{ID: 1, At: 246_165 * time.Microsecond}}, got)

	for _, tok := range []int64{40_000, 50_000, 60_000} {
		d := transfer.Estimate(rdma, bytes(tok))
		t.Logf("reseed %5d tokens (%.3f GB) RDMA 1×200G: %v", tok, float64(bytes(tok))/1e9, d)
		inRange(t, d.Seconds(), 0.150, 0.300, "RDMA reseed of %d tokens should be ≈ 200 ms", tok)
	}

	for _, path := range []struct {
		name string
		cfg  transfer.Config
	}{
		{"TCP loopback, Python KV path 1.5 GB/s", transfer.Config{Name: "p0/lo", Transport: transfer.TCP, LineRate: gbps200, MaxRate: 1.5e9}},
		{"TCP loopback, Python KV path 2.0 GB/s", transfer.Config{Name: "p0/lo", Transport: transfer.TCP, LineRate: gbps200, MaxRate: 2e9}},
		{"TCP loopback, Efficiency 0.06", transfer.Config{Name: "p0/lo", Transport: transfer.TCP, LineRate: gbps200, Efficiency: 0.06}},
	} {
		for _, tok := range []int64{40_000, 50_000, 60_000} {
			d := transfer.Estimate(path.cfg, bytes(tok))
			t.Logf("reseed %5d tokens %-40s %v", tok, path.name+":", d)
			inRange(t, d.Seconds(), 1.5, 4, "%s, %d tokens", path.name, tok)
		}
	}
	// Default (NIC-bound) TCP is far faster than the measured loopback path.
	d := transfer.Estimate(transfer.Config{Transport: transfer.TCP, LineRate: gbps200, Latency: rackLat}, bytes(50_000))
	t.Logf("reseed 50000 tokens default TCP 1×200G: %v", d)
	inRange(t, d.Seconds(), 0.5, 0.7)
}

func withLineRate(c transfer.Config, r float64) transfer.Config {
	c.LineRate = r
	return c
}

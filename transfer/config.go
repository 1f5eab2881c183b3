package transfer

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Transport is the protocol a NIC uses to move KV bytes. It selects the
// default efficiency, per-NIC rate ceiling and per-transfer setup cost.
type Transport string

const (
	// RDMA is the Mooncake transfer engine over RoCE/InfiniBand (mlx5).
	RDMA Transport = "rdma"
	// TCP is the Mooncake/SGLang TCP transport through the kernel stack.
	TCP Transport = "tcp"
)

// Valid reports whether t is a known transport.
func (t Transport) Valid() bool { return t == RDMA || t == TCP }

// Calibrated transport defaults. The derivations are in calibration_test.go;
// in short:
//
//   - RDMA efficiency 0.87: Mooncake TE moves 40 GB at 87 GB/s over
//     4×200 Gb/s RoCE (Mooncake paper), i.e. 87 % of line rate.
//   - RDMA per-NIC ceiling 20 GB/s: achieved RDMA throughput does not scale
//     with line rate past ~200 Gb/s. Mooncake TE reaches 190 GB/s on
//     8×400 Gb/s (23.75 GB/s per NIC, 47.5 % of line rate) and the Mooncake
//     vLLM PD connector 4.5 GB in 31.65 ms on 8×400 Gb/s CX-7 (~18 GB/s per
//     NIC). A host-side ceiling (PCIe/DMA/GPU-memory path) of 20 GB/s per
//     NIC splits the difference between the raw-engine and the connector
//     figures; it is the binding limit for 200 and 400 Gb/s NICs.
//   - RDMA setup 400 µs: the vLLM PD connector moves 20 MB over 8 NICs in
//     0.54 ms; 2.5 MB per NIC at 20 GB/s is 125 µs, the remaining ~0.4 ms is
//     per-transfer fixed cost (metadata handshake, descriptor submission,
//     completion polling), with Latency ≈ 5 µs on top.
//   - TCP efficiency 0.33 and ceiling 8.25 GB/s: Mooncake reports TE 2.4×
//     faster than TCP on 4×200 Gb/s; 20 GB/s / 2.4 ≈ 8.3 GB/s per NIC. TCP is
//     CPU-bound, so the same ceiling applies to faster NICs.
//   - TCP setup 1 ms: connection reuse plus a request/metadata round trip
//     through the Python KV manager (no published figure; an assumption that
//     is negligible against GB-sized transfers).
const (
	rdmaEfficiency = 0.87
	rdmaMaxRate    = 20e9
	rdmaSetup      = 400 * time.Microsecond
	tcpEfficiency  = 0.33
	tcpMaxRate     = 8.25e9
	tcpSetup       = time.Millisecond
)

// DefaultEfficiency returns the fraction of line rate a transport achieves
// on a NIC when Config.Efficiency is 0 (0 for an unknown transport).
func DefaultEfficiency(t Transport) float64 {
	switch t {
	case RDMA:
		return rdmaEfficiency
	case TCP:
		return tcpEfficiency
	}
	return 0
}

// DefaultMaxRate returns the per-NIC throughput ceiling in bytes/s (host
// DMA path for RDMA, CPU for TCP) used when Config.MaxRate is 0 (0 for an
// unknown transport).
func DefaultMaxRate(t Transport) float64 {
	switch t {
	case RDMA:
		return rdmaMaxRate
	case TCP:
		return tcpMaxRate
	}
	return 0
}

// DefaultSetup returns the per-transfer setup cost used when Config.Setup is
// 0 (0 for an unknown transport).
func DefaultSetup(t Transport) time.Duration {
	switch t {
	case RDMA:
		return rdmaSetup
	case TCP:
		return tcpSetup
	}
	return 0
}

// Config describes one NIC. Zero Efficiency, MaxRate and Setup select the
// transport defaults.
type Config struct {
	// Name identifies the NIC in errors, e.g. "p0/mlx5_0".
	Name string
	// Transport is RDMA or TCP.
	Transport Transport
	// LineRate is the nominal port speed in bytes/s (200 Gb/s = 25e9).
	LineRate float64
	// Latency is the fixed propagation and per-transfer software cost paid
	// by every transfer before it uses any bandwidth.
	Latency time.Duration
	// Efficiency is the fraction of LineRate the transport achieves, in
	// (0, 1]; 0 selects DefaultEfficiency(Transport).
	Efficiency float64
	// Setup is the per-transfer setup cost (memory registration, handshake)
	// paid after Latency and before using bandwidth; 0 selects
	// DefaultSetup(Transport). Use 1ns for "no setup".
	Setup time.Duration
	// MaxRate caps the NIC's effective bandwidth in bytes/s regardless of
	// line rate (host PCIe/DMA path for RDMA, CPU for TCP, a Python KV path
	// for loopback TCP); 0 selects DefaultMaxRate(Transport), +Inf means no
	// ceiling. This field is an addition to the original API.
	MaxRate float64
}

// Validate reports whether c describes a usable NIC.
func (c Config) Validate() error {
	var errs []error
	if !c.Transport.Valid() {
		errs = append(errs, fmt.Errorf("transport %q is not %q or %q", c.Transport, RDMA, TCP))
	}
	if !(c.LineRate > 0) || math.IsInf(c.LineRate, 0) {
		errs = append(errs, fmt.Errorf("line rate %g must be a positive finite number of bytes/s", c.LineRate))
	}
	if c.Latency < 0 {
		errs = append(errs, fmt.Errorf("latency %v must not be negative", c.Latency))
	}
	if c.Setup < 0 {
		errs = append(errs, fmt.Errorf("setup %v must not be negative", c.Setup))
	}
	if !(c.Efficiency >= 0 && c.Efficiency <= 1) {
		errs = append(errs, fmt.Errorf("efficiency %g must be in (0, 1] (0 = transport default)", c.Efficiency))
	}
	if !(c.MaxRate >= 0) {
		errs = append(errs, fmt.Errorf("max rate %g must be positive (0 = transport default, +Inf = none)", c.MaxRate))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("transfer: NIC %q: %w", c.Name, err)
	}
	return nil
}

// withDefaults returns c with zero Efficiency, MaxRate and Setup replaced by
// the transport defaults.
func (c Config) withDefaults() Config {
	if c.Efficiency == 0 {
		c.Efficiency = DefaultEfficiency(c.Transport)
	}
	if c.MaxRate == 0 {
		c.MaxRate = DefaultMaxRate(c.Transport)
	}
	if c.Setup == 0 {
		c.Setup = DefaultSetup(c.Transport)
	}
	return c
}

// EffectiveRate returns the bandwidth in bytes/s an undegraded NIC with
// config c delivers: min(Efficiency·LineRate, MaxRate) after defaults.
func (c Config) EffectiveRate() float64 {
	c = c.withDefaults()
	return math.Min(c.Efficiency*c.LineRate, c.MaxRate)
}

// FixedCost returns the bandwidth-free part of every transfer: Latency plus
// Setup (after defaults).
func (c Config) FixedCost() time.Duration {
	c = c.withDefaults()
	return c.Latency + c.Setup
}

// Estimate returns the time a single transfer of bytes takes on an idle,
// healthy NIC with config cfg: FixedCost + bytes/EffectiveRate, rounded up
// to the nanosecond exactly as NIC does. It panics if cfg is invalid or
// bytes is negative.
func Estimate(cfg Config, bytes int64) time.Duration {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if bytes < 0 {
		panic(fmt.Sprintf("transfer: Estimate: negative bytes %d", bytes))
	}
	return addSat(cfg.FixedCost(), ceilNs(float64(bytes), cfg.EffectiveRate()))
}

// never is the "no event" time.
const never = time.Duration(math.MaxInt64)

// ceilNs returns the whole nanoseconds needed to move rem bytes at rate
// bytes/s, rounded up; never if it does not fit.
func ceilNs(rem, rate float64) time.Duration {
	if rem <= 0 {
		return 0
	}
	if !(rate > 0) {
		return never
	}
	x := rem * 1e9 / rate
	d := math.Ceil(x)
	// Snap values within floating-point noise of a whole nanosecond to it,
	// so that exact results (10 B at 1/3 B/ns) do not gain a spurious 1 ns.
	if r := d - 1; x-r <= snapTolerance*x {
		d = r
	}
	if d >= math.MaxInt64 {
		return never
	}
	return time.Duration(d)
}

// snapTolerance is the relative error below which a duration is taken to be
// a whole number of nanoseconds (1 ps per second of transfer).
const snapTolerance = 1e-12

// addSat returns a+b saturating at never (both non-negative).
func addSat(a, b time.Duration) time.Duration {
	if b == never || a > never-b {
		return never
	}
	return a + b
}

package topology

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBandwidth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64 // bytes per second
	}{
		{"200Gbps", 25e9},
		{"200 Gb/s", 25e9},
		{"200 Gbps", 25e9},
		{"  200Gbps  ", 25e9},
		{"400 Gbit/s", 50e9},
		{"400Gbits/s", 50e9},
		{"25GB/s", 25e9},
		{"25GBps", 25e9},
		{"25 GB/s", 25e9},
		{"25 Gbyte/s", 25e9},
		{"1.5GiB/s", 1.5 * (1 << 30)},
		{"1GiBps", 1 << 30},
		{"8Gibps", 1 << 30},
		{"100Mbps", 12.5e6},
		{"100 MB/s", 100e6},
		{"1Tbps", 125e9},
		{"2.5E10 B/s", 25e9},
		{".5GB/s", 0.5e9},
		{"1Mbps", 125e3},
		{"125 kB/s", 125e3},
		{"100Tbps", 12.5e12},
		{"1.5 GB/s", 1.5e9},
		{"5.GB/s", 5e9},
	} {
		got, err := ParseBandwidth(tc.in)
		if assert.NoError(t, err, tc.in) {
			assert.InEpsilon(t, tc.want, got, 1e-12, tc.in)
		}
	}
}

func TestParseBandwidthErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "does not start with a number"},
		{"fast", "does not start with a number"},
		{"Gbps", "does not start with a number"},
		{"-200Gbps", "does not start with a number"},
		{"200Gbs", `unknown unit "Gbs"`},
		{"200 gbps", `unknown unit "gbps"`}, // lower-case g is not a prefix
		{"200mbps", `unknown unit "mbps"`},  // m would be milli: ambiguous
		{"200G", `unknown unit "G"`},
		{"200 Gb", `unknown unit "Gb"`},
		{"200 ps", `unknown unit "ps"`},
		{"200 Xbps", `unknown unit "Xbps"`},
		{"1e", `unknown unit "e"`},
		{"0", "must be positive"},
		{"0 Gbps", "must be positive"},
		{"1e309", "invalid number"},
		{"1e308 PB/s", "positive and finite"},
		{"1e-400", "must be positive"},
		// A unit is required; the error suggests one.
		{"200", `has no unit: did you mean "200Gbps"?`},
		{"25000000000", `did you mean "25GB/s"?`},
		{"2.5e10", `did you mean "25GB/s"?`},
		// Implausible rates are refused with the bound.
		{"1bps", "between 1Mbps and 100Tbps"},
		{"8 b/s", "between 1Mbps and 100Tbps"},
		{"1 byte/s", "implausible"},
		{"1KiB/s", "implausible"},
		{"1PB/s", "implausible"},
	} {
		_, err := ParseBandwidth(tc.in)
		if assert.Error(t, err, tc.in) {
			assert.Contains(t, err.Error(), tc.want, tc.in)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"10us": 10 * time.Microsecond, "20µs": 20 * time.Microsecond, "1.5ms": 1500 * time.Microsecond,
		"2.5s": 2500 * time.Millisecond, "1m30s": 90 * time.Second, "0": 0, "0s": 0, " 1s ": time.Second,
	} {
		got, err := parseDuration(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for in, want := range map[string]string{
		"20": "Go duration syntax", "": "Go duration syntax", "1 s": "Go duration syntax",
		"fast": "Go duration syntax", "-1s": "must not be negative",
	} {
		_, err := parseDuration(in)
		if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), want, in)
		}
	}
}

func TestSuggest(t *testing.T) {
	assert.Equal(t, ` Did you mean "kvc"?`, didYouMean("kcv", []string{"kvc", "vanilla"}))
	assert.Equal(t, `"a", "b" or "c"`, quotedOr([]string{"c", "a", "b"}))
	assert.Equal(t, `"a" and "b"`, quotedList([]string{"b", "a"}))
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64 // bytes
	}{
		{"1.1GiB", 1.1 * (1 << 30)},
		{"1.1 GiB", 1.1 * (1 << 30)},
		{" 1.44GiB ", 1.44 * (1 << 30)},
		{"512MiB", 512 << 20},
		{"4KiB", 4096},
		{"4kiB", 4096},
		{"1TiB", 1 << 40},
		{"1PiB", 1 << 50},
		{"80GB", 80e9},
		{"80 GB", 80e9},
		{"4KB", 4e3},
		{"4kB", 4e3},
		{"2MB", 2e6},
		{"1TB", 1e12},
		{"1 Gbyte", 1e9},
		{"3 bytes", 3},
		{"1 byte", 1},
		{"1B", 1},
		{".5GiB", 0.5 * (1 << 30)},
		{"0", 0},
		{"0GiB", 0},
		{"1e-400", 0},
	} {
		got, err := ParseSize(tc.in)
		if assert.NoError(t, err, tc.in) {
			assert.InDelta(t, tc.want, got, 1e-9*tc.want, tc.in)
		}
	}
}

func TestParseSizeErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "does not start with a number"},
		{"lots", "does not start with a number"},
		{"GiB", "does not start with a number"},
		{"-1GiB", "must not be negative"},
		{" -5", "must not be negative"},
		{"1.1Gib", `unknown unit "Gib" (sizes are in bytes: upper-case B)`},
		{"8 bits", `unknown unit "bits" (sizes are in bytes`},
		{"1.1 gib", `unknown unit "gib"`},
		{"1G", `unknown unit "G"`},
		{"1GiB/s", `unknown unit "GiB/s"`},
		{"1 GiBs", `unknown unit "GiBs"`},
		{"1mB", `unknown unit "mB"`}, // m would be milli
		{"1e", `unknown unit "e"`},
		{"1e309", "invalid number"},
		{"1e308 PB", "must be finite"},
		{"1181116006", `has no unit: did you mean "1.1GiB"?`},
		{"80", `did you mean "80GiB"?`},
		{"2PiB", "at most 1PiB"},
	} {
		_, err := ParseSize(tc.in)
		if assert.Error(t, err, tc.in) {
			assert.Contains(t, err.Error(), tc.want, tc.in)
		}
	}
}

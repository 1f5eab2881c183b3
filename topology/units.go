package topology

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseBandwidth parses a link rate and returns it in bytes per second.
//
// Accepted forms are a number, optional spaces, and an optional unit made of
// a prefix, a base and a per-second suffix:
//
//	prefix:  k or K (10^3), M (10^6), G (10^9), T (10^12), P (10^15),
//	         Ki, Mi, Gi, Ti, Pi (powers of 1024)
//	base:    b, bit, bits (bits) or B, byte, bytes (bytes) -- case matters
//	suffix:  ps or /s
//
// so "200Gbps", "200 Gb/s", "25GB/s", "25GBps", "1.5GiB/s", "100Mbps" and
// "400 Gbit/s" all work. The unit is required: a plain number is an error
// that suggests the likely unit (200 is "200Gbps"; 25e9 is "25GB/s"). The
// result is in [MinBandwidth, MaxBandwidth].
func ParseBandwidth(s string) (float64, error) {
	v, unit, err := splitQuantity("bandwidth", s, strings.TrimSpace(s), suggestBandwidth, bandwidthUnits)
	if err != nil {
		return 0, err
	}
	mult, ok := bandwidthUnit(unit)
	if !ok {
		return 0, fmt.Errorf("bandwidth %q has an unknown unit %q; use a unit like %s", s, unit, bandwidthUnits)
	}
	bps := v * mult
	if !(bps > 0) || math.IsInf(bps, 0) {
		return 0, fmt.Errorf("bandwidth %q must be positive and finite", s)
	}
	if bps < MinBandwidth || bps > MaxBandwidth {
		return 0, fmt.Errorf("bandwidth %q (%g bytes/s) is implausible: it must be between 1Mbps and 100Tbps", s, bps)
	}
	return bps, nil
}

// The units the errors of ParseBandwidth and ParseSize name.
const (
	bandwidthUnits = `"Gbps", "Gb/s", "GB/s", "GiB/s" or "Mbps" (lower-case b = bits, upper-case B = bytes)`
	sizeUnits      = `"GiB", "MiB", "GB" or "B"`
)

// splitQuantity splits str (s trimmed, s as written for the errors) into
// its leading number and the unit after it, with the errors ParseBandwidth
// and ParseSize share (kind names the quantity): no leading number, an
// invalid or infinite number, or a non-zero number without a unit (the
// error suggests one, and names units).
func splitQuantity(kind, s, str string, suggest func(float64) string, units string) (v float64, unit string, err error) {
	n := scanNumber(str)
	if n == 0 {
		return 0, "", fmt.Errorf("%s %q does not start with a number", kind, s)
	}
	v, err = strconv.ParseFloat(str[:n], 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, "", fmt.Errorf("%s %q has an invalid number %q", kind, s, str[:n])
	}
	unit = strings.TrimSpace(str[n:])
	if unit == "" && v != 0 {
		return 0, "", fmt.Errorf("%s %q has no unit: did you mean %q? A %s needs a unit such as %s", kind, s, suggest(v), kind, units)
	}
	return v, unit, nil
}

// Bandwidth bounds (bytes/s): 1 Mb/s to 100 Tb/s. Below, a transfer of a
// session's KV takes hours; above, no link or memory bus is that fast.
const (
	MinBandwidth = 1e6 / 8
	MaxBandwidth = 100e12 / 8
)

// suggestBandwidth guesses what a unitless bandwidth meant: a small
// number is Gb/s ("200Gbps"), a large one bytes/s ("25GB/s").
func suggestBandwidth(v float64) string {
	if v < 1e5 {
		return strconv.FormatFloat(v, 'g', -1, 64) + "Gbps"
	}
	return strconv.FormatFloat(v/1e9, 'g', 4, 64) + "GB/s"
}

// scanNumber returns the length of the longest prefix of s that looks like
// a decimal floating-point number (digits, one dot, optional exponent).
func scanNumber(s string) int {
	i := 0
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0
	}
	// Exponent only when it is complete, so "1e" is not swallowed.
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j {
			i = k
		}
	}
	return i
}

var (
	decimalPrefix = map[byte]float64{'k': 1e3, 'K': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12, 'P': 1e15}
	binaryPrefix  = map[byte]float64{'k': 1 << 10, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40, 'P': 1 << 50}
)

// splitPrefix splits the multiplier prefix (k, M, G, T, P, decimal, or
// with an i binary) off a non-empty unit: its multiplier (1 without one)
// and the rest of the unit.
func splitPrefix(unit string) (float64, string) {
	if m, ok := decimalPrefix[unit[0]]; ok {
		if len(unit) > 1 && unit[1] == 'i' {
			return binaryPrefix[unit[0]], unit[2:]
		}
		return m, unit[1:]
	}
	return 1, unit
}

// bandwidthUnit returns the bytes-per-second multiplier of unit.
func bandwidthUnit(unit string) (float64, bool) {
	if unit == "" {
		return 1, true // only for 0, which is then refused
	}
	mult, unit := splitPrefix(unit)
	var base string
	switch {
	case strings.HasSuffix(unit, "ps"):
		base = strings.TrimSuffix(unit, "ps")
	case strings.HasSuffix(unit, "/s"):
		base = strings.TrimSuffix(unit, "/s")
	default:
		return 0, false
	}
	switch base {
	case "b", "bit", "bits":
		return mult / 8, true
	case "B", "byte", "bytes":
		return mult, true
	}
	return 0, false
}

// ParseSize parses an amount of memory and returns it in bytes.
//
// Accepted forms are a number, optional spaces, and an optional unit made of
// a prefix and a base:
//
//	prefix:  k or K (10^3), M (10^6), G (10^9), T (10^12), P (10^15),
//	         Ki, Mi, Gi, Ti, Pi (powers of 1024)
//	base:    B, byte, bytes (bits are not accepted: memory is sized in bytes)
//
// so "1.1GiB", "1.1 GiB", "512MiB", "80GB" and "4KB" all work. The unit
// is required, except for 0: a plain number is an error that suggests the
// likely unit. The result is in [0, MaxSize].
func ParseSize(s string) (float64, error) {
	str := strings.TrimSpace(s)
	if strings.HasPrefix(str, "-") {
		return 0, fmt.Errorf("size %q must not be negative", s)
	}
	v, unit, err := splitQuantity("size", s, str, suggestSize, sizeUnits)
	if err != nil {
		return 0, err
	}
	mult, ok := sizeUnit(unit)
	if !ok {
		hint := ""
		if strings.HasSuffix(unit, "b") || strings.HasSuffix(unit, "bit") || strings.HasSuffix(unit, "bits") {
			hint = " (sizes are in bytes: upper-case B)"
		}
		return 0, fmt.Errorf("size %q has an unknown unit %q%s; use a unit like %s, or a plain number of bytes", s, unit, hint, sizeUnits)
	}
	b := v * mult
	if math.IsInf(b, 0) {
		return 0, fmt.Errorf("size %q must be finite", s)
	}
	if b > MaxSize {
		return 0, fmt.Errorf("size %q is implausible: it must be at most 1PiB", s)
	}
	return b, nil
}

// MaxSize bounds a memory size (1 PiB).
const MaxSize = 1 << 50

// suggestSize guesses what a unitless size meant: a small number is GiB,
// a large one bytes ("1.1GiB").
func suggestSize(v float64) string {
	if v < 1e4 {
		return strconv.FormatFloat(v, 'g', -1, 64) + "GiB"
	}
	return strconv.FormatFloat(v/(1<<30), 'g', 3, 64) + "GiB"
}

// sizeUnit returns the byte multiplier of a memory size unit.
func sizeUnit(unit string) (float64, bool) {
	if unit == "" {
		return 1, true
	}
	mult, unit := splitPrefix(unit)
	switch unit {
	case "B", "byte", "bytes":
		return mult, true
	}
	return 0, false
}

// parseDuration parses Go duration syntax and rejects negative values. A
// bare "0" is accepted; any other unitless number is not (ambiguous).
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; use Go duration syntax such as \"20us\", \"1.5s\" or \"2m\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q must not be negative", s)
	}
	return d, nil
}

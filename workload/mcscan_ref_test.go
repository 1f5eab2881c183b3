package workload

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// appendIDsBytewise is appendIDs as it was before it read digits 8 bytes
// at a time: the reference of TestAppendIDsMatchesBytewise.
func appendIDsBytewise(b []byte, i int, out []uint64) ([]uint64, int, bool) {
	if i >= len(b) || b[i] != '[' {
		return nil, i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, i + 1, true
	}
	for {
		start := i
		var v uint64
		for i < len(b) {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			v = v*10 + uint64(d)
			i++
		}
		if n := i - start; n == 0 || (b[start] == '0' && n > 1) {
			return nil, i, false
		} else if n > 19 {
			var ok bool
			if v, ok = checkedUint(b[start:i]); !ok {
				return nil, i, false
			}
		}
		out = append(out, v)
		if i+2 < len(b) && b[i] == ',' && b[i+1] == ' ' && b[i+2]-'0' <= 9 {
			i += 2
			continue
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return nil, i, false
		}
		switch b[i] {
		case ']':
			return out, i + 1, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return nil, i, false
		}
	}
}

// TestAppendIDsMatchesBytewise: on arrays of numbers of every length
// (leading zeros, 20+ digits, overflow), separators, and arbitrary bytes
// (non-ASCII ones included) after or inside them, appendIDs returns what
// the byte-at-a-time loop returns: the ids, the index and ok.
func TestAppendIDsMatchesBytewise(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var sb strings.Builder
		sb.WriteString(rapid.SampledFrom([]string{"", " ", "x"}).Draw(t, "pre"))
		at := sb.Len()
		sb.WriteByte('[')
		for k := rapid.IntRange(0, 6).Draw(t, "n"); k > 0; k-- {
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				sb.WriteString(strconv.FormatUint(rapid.Uint64().Draw(t, "v"), 10))
			case 1:
				sb.WriteString(strconv.FormatUint(rapid.Uint64Range(0, 1<<47).Draw(t, "id"), 10))
			case 2: // any digit string: leading zeros, 20+ digits
				sb.WriteString(rapid.StringMatching(`[0-9]{0,24}`).Draw(t, "digits"))
			default:
				sb.Write(rapid.SliceOfN(rapid.Byte(), 0, 3).Draw(t, "bytes"))
			}
			sb.WriteString(rapid.SampledFrom([]string{", ", ",", " , ", "", "]", ",  ", "\xfa9", "\xff", ":", "?"}).Draw(t, "sep"))
		}
		sb.WriteString(rapid.SampledFrom([]string{"]", "]}", "", "] ", "]}\n12345678"}).Draw(t, "end"))
		line := []byte(sb.String())
		got, gi, gok := appendIDs(line, at, nil)
		want, wi, wok := appendIDsBytewise(line, at, nil)
		if gok != wok || (gok && (gi != wi || !slices.Equal(got, want))) {
			t.Fatalf("appendIDs(%q) = %v, %d, %v; bytewise %v, %d, %v", line, got, gi, gok, want, wi, wok)
		}
	})
}

// TestDigits8 checks digits8 and swar8 on every position of the first
// non-digit and every byte value there.
func TestDigits8(t *testing.T) {
	for k := 0; k <= 8; k++ {
		for c := 0; c < 256; c++ {
			if c >= '0' && c <= '9' {
				continue
			}
			b := []byte("98765432")
			if k < 8 {
				b[k] = byte(c)
				for j := k + 1; j < 8; j++ {
					b[j] = byte(c + j)
				}
			}
			w := uint64(0)
			for j := 7; j >= 0; j-- {
				w = w<<8 | uint64(b[j])
			}
			if got := digits8(w); got != k {
				t.Fatalf("digits8(%q) = %d, want %d", b, got, k)
			}
			if k > 0 {
				want, _ := strconv.ParseUint(string(b[:k]), 10, 64)
				var got uint64
				if k == 8 {
					got = swar8(w - ascii0s)
				} else {
					got = swar8((w - ascii0s) << (64 - 8*k))
				}
				if got != want {
					t.Fatalf("swar8 of %q = %d, want %d", b[:k], got, want)
				}
			}
		}
	}
}

// checkedUintRef is checkedUint as it was (every digit checked).
func checkedUintRef(ds []byte) (uint64, bool) {
	var v uint64
	for _, c := range ds {
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// TestCheckedUintMatchesRef: digit strings of 0-25 digits, leading zeros
// and the numbers around MaxUint64 included.
func TestCheckedUintMatchesRef(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ds := []byte(rapid.OneOf(rapid.StringMatching(`[0-9]{0,25}`), rapid.StringMatching(`0{0,3}1844674407370955161[0-9]`),
			rapid.Just("18446744073709551615"), rapid.Just("18446744073709551616"), rapid.Just("99999999999999999999")).Draw(t, "ds"))
		got, gok := checkedUint(ds)
		want, wok := checkedUintRef(ds)
		if got != want || gok != wok {
			t.Fatalf("checkedUint(%s) = %d, %v; want %d, %v", ds, got, gok, want, wok)
		}
	})
}

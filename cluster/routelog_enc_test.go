package cluster

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// genString draws strings that exercise every escape: ASCII with quotes,
// backslashes, control bytes and <>&, multi-byte runes, U+2028/U+2029,
// invalid UTF-8.
func genString() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		parts := rapid.SliceOfN(rapid.SampledFrom([]string{
			"d0", "decode-1", "kvc", "\"", "\\", "<", ">", "&", "\b", "\f", "\n", "\r", "\t",
			"\x00", "\x1f", "\x7f", "é", "日本", "\u2028", "\u2029", "\xff", "\xe2\x80", "🙂", " ", "a",
		}), 0, 8).Draw(t, "parts")
		s := ""
		for _, p := range parts {
			s += p
		}
		return s
	})
}

func genFloat() *rapid.Generator[float64] {
	return rapid.OneOf(
		rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1, -1, 1e-6, 9.99e-7, 1e21, 9.99e20, 1e-9, 123.456, 1e300, 5e-324}),
		rapid.Float64(),
		rapid.Map(rapid.Int64Range(-1e9, 1e9), func(n int64) float64 { return math.Round(float64(n)/1e3) / 1e3 }),
	)
}

func genLog() *rapid.Generator[*pdLog] {
	cand := rapid.Custom(func(t *rapid.T) pdCand {
		var k [4]float64
		for i := range k {
			k[i] = genFloat().Draw(t, "key")
		}
		return pdCand{DWorker: genString().Draw(t, "dw"), Key: k, Overlap: rapid.Int().Draw(t, "ov"),
			Rejects: rapid.IntRange(-3, 9).Draw(t, "rej"), Eligible: rapid.Bool().Draw(t, "el")}
	})
	try := rapid.Custom(func(t *rapid.T) pdTry {
		tr := pdTry{Try: rapid.Int().Draw(t, "try"), AtMS: genFloat().Draw(t, "at"),
			Omitted: rapid.IntRange(-2, 5).Draw(t, "om"), Chosen: genString().Draw(t, "ch"),
			Reply: genString().Draw(t, "re"), Mode: genString().Draw(t, "mo"), Reason: genString().Draw(t, "rs")}
		if !rapid.Bool().Draw(t, "nilCands") {
			tr.Candidates = rapid.SliceOfN(cand, 0, 4).Draw(t, "cands")
			if tr.Candidates == nil {
				tr.Candidates = []pdCand{}
			}
		}
		return tr
	})
	return rapid.Custom(func(t *rapid.T) *pdLog {
		l := &pdLog{ID: rapid.Int64().Draw(t, "id"), Session: genString().Draw(t, "s"), Turn: rapid.Int().Draw(t, "turn"),
			InputTokens: rapid.Int().Draw(t, "in"), Policy: genString().Draw(t, "pol"), Fallback: rapid.Bool().Draw(t, "fb"),
			FallbackReason: genString().Draw(t, "fr"), Mode: genString().Draw(t, "m"), PWorker: genString().Draw(t, "pw"),
			DWorker: genString().Draw(t, "dw")}
		if !rapid.Bool().Draw(t, "nilTries") {
			l.Tries = rapid.SliceOfN(try, 0, 3).Draw(t, "tries")
			if l.Tries == nil {
				l.Tries = []pdTry{}
			}
		}
		return l
	})
}

// TestAppendLogMatchesJSON: the hand-rolled encoder writes json.Marshal's
// bytes for any line, and the encoder hands back the same bytes; a line
// json.Marshal refuses (a non-finite float) gets marshalLog's error line.
func TestAppendLogMatchesJSON(t *testing.T) {
	var a lineEncoder
	rapid.Check(t, func(t *rapid.T) {
		l := genLog().Draw(t, "log")
		want, err := json.Marshal(l)
		got, ok := appendLog(nil, l)
		if err != nil {
			require.False(t, ok, "json refused the line: %v", err)
		} else {
			require.True(t, ok)
			require.Equal(t, string(want), string(got))
		}
		require.Equal(t, string(marshalLog(l)), string(a.encodeLog(l)))
	})
}

// TestAppendLogNonFinite: NaN and ±Inf go through marshalLog.
func TestAppendLogNonFinite(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		l := &pdLog{ID: 7, Tries: []pdTry{{AtMS: 1, Candidates: []pdCand{{Key: [4]float64{0, f, 0, 0}}}}}}
		_, ok := appendLog(nil, l)
		require.False(t, ok)
		var a lineEncoder
		require.Contains(t, string(a.encodeLog(l)), `"error"`)
		l.Tries[0].Candidates[0].Key[1], l.Tries[0].AtMS = 0, f
		_, ok = appendLog(nil, l)
		require.False(t, ok)
	}
}

// TestLineEncoderKeepsLines: lines stay intact while the encoder's
// scratch buffer is reused and grows, and each is capped at its length:
// appending to one (as a caller may) leaves the lines cut after it from
// the same chunk intact.
func TestLineEncoderKeepsLines(t *testing.T) {
	var a lineEncoder
	var lines [][]byte
	var want []string
	for i := 0; i < 2000; i++ {
		l := &pdLog{ID: int64(i), Session: string(make([]byte, i%97)), Tries: []pdTry{}}
		if i%500 == 0 {
			l.Policy = string(make([]byte, 3<<16))
		}
		lines = append(lines, a.encodeLog(l))
		want = append(want, string(marshalLog(l)))
	}
	for i := range lines {
		require.Equal(t, want[i], string(lines[i]), "line %d", i)
		require.Equal(t, len(lines[i]), cap(lines[i]), "line %d can be appended to", i)
		_ = append(lines[i], '\n')
	}
	for i := range lines {
		require.Equal(t, want[i], string(lines[i]), "line %d after the appends", i)
	}
}

// TestAppendJSONFloatMicros: the whole-ns fast path (appendMicroDecimal)
// writes what strconv's shortest 'f' form writes, at the ends of its range
// (2^30 ms), around powers of ten, for negative values and fractions below
// 1, and for random ns counts and random floats.
func TestAppendJSONFloatMicros(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONFloat(nil, f); string(got) != string(want) {
			t.Fatalf("appendJSONFloat(%v) = %s, json %s", f, got, want)
		}
	}
	edges := []int64{1, 5, 10, 999999, 1000001, 123456789, 1234567125, 999999999999, 1000000000001,
		1<<30*1e6 - 1, 1<<30*1e6 + 1, 1<<50 + 1, 9999999999999999}
	for _, n := range edges {
		for _, v := range []int64{n, -n} {
			check(float64(v) / 1e6)
			check(math.Nextafter(float64(v)/1e6, math.Inf(1)))
			check(math.Nextafter(float64(v)/1e6, math.Inf(-1)))
		}
	}
	for _, f := range []float64{1 << 30, 1<<30 - 1e-6, -(1<<30 - 1e-6), 1e-6, 1.5e-6, 0.1, 0.2, 0.3, 1.0000005} {
		check(f)
	}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.Int64Range(-(1<<31)*1e6, (1<<31)*1e6).Draw(rt, "ns")
		scale := rapid.SampledFrom([]float64{1e6, 1e3, 1e5, 1e7}).Draw(rt, "scale")
		f := float64(n) / scale
		want, _ := json.Marshal(f)
		if got := appendJSONFloat(nil, f); string(got) != string(want) {
			rt.Fatalf("appendJSONFloat(%v) = %s, json %s", f, got, want)
		}
		g := rapid.Float64Range(-(1<<31), 1<<31).Draw(rt, "f")
		want, _ = json.Marshal(g)
		if got := appendJSONFloat(nil, g); string(got) != string(want) {
			rt.Fatalf("appendJSONFloat(%v) = %s, json %s", g, got, want)
		}
	})
}

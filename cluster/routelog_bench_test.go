package cluster

import (
	"encoding/json"
	"math"
	"testing"
)

// sampleLog is a typical routing_log.jsonl line of a 1P3D KVC run: one
// try over three decode workers.
func sampleLog() *pdLog {
	cands := []pdCand{
		{DWorker: "d0", Key: [4]float64{12, 1, -2, -2}, Overlap: 12, Eligible: true},
		{DWorker: "d1", Key: [4]float64{0, 0, -1, -3}, Eligible: true},
		{DWorker: "d2", Key: [4]float64{0, 0, 0, -1}, Rejects: 1, Eligible: false},
	}
	return &pdLog{ID: 123456, Session: "L1234", Turn: 7, InputTokens: 40160, Policy: "kvc",
		Tries: []pdTry{{AtMS: 1234567.125, Candidates: cands, Chosen: "d0", Reply: "admitted", Mode: "Direct"}},
		Mode:  "Direct", PWorker: "", DWorker: "d0"}
}

// BenchmarkRoutingLogLine: one routing_log.jsonl line through the append
// encoder the router uses (ns/line, B/line = bytes per request written).
func BenchmarkRoutingLogLine(b *testing.B) {
	l := sampleLog()
	var e lineEncoder
	var line []byte
	b.ReportAllocs()
	for b.Loop() {
		line = e.encodeLog(l)
	}
	b.ReportMetric(float64(len(line)), "B/line")
}

// BenchmarkRoutingLogLineJSON is the same line through encoding/json,
// which the encoder replaced (kept to compare with).
func BenchmarkRoutingLogLineJSON(b *testing.B) {
	l := sampleLog()
	var line []byte
	b.ReportAllocs()
	for b.Loop() {
		line, _ = json.Marshal(l)
	}
	b.ReportMetric(float64(len(line)), "B/line")
}

// TestAppendJSONFloatIntegers: the integer fast path writes what
// encoding/json writes, -0 and the bounds included.
func TestAppendJSONFloatIntegers(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, f := range []float64{0, negZero, 1, -1, 12, -3, 1e15 - 1, 1e15, -1e15, 1e15 + 1, 1e20, 1e21, 123456789012345, 0.5, -2.5, 1e-7} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONFloat(nil, f); string(got) != string(want) {
			t.Errorf("%v: got %s, want %s", f, got, want)
		}
	}
}

package cluster

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/pdemu/pdemu/policy"
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

// sampleCands are the 48 candidates a try of the 16p48d scenario sees: a
// few decode workers hold some of the request's blocks, the rest none;
// in-flight and assigned counts vary.
func sampleCands() []policy.Candidate {
	cs := make([]policy.Candidate, 48)
	for d := range cs {
		c := policy.Candidate{D: d, Inflight: d % 3, Assigned: int64(40 + d%7), Rejects: d % 5 / 4, Tried: d == 9}
		if d%11 == 3 {
			c.Overlap = 40 + d
			c.Score = float64(c.Overlap)
		}
		c.Sticky = d == 14
		if c.Sticky {
			c.Score++
		}
		c.Blocked = c.Rejects >= 2
		cs[d] = c
	}
	return cs
}

// BenchmarkRouterObsTry: the routing log's per-try work in the router
// (routerObs.try: the top k = 8 of 48 candidates, recorded), then the
// line (one try) encoded: ns and allocations per logged decision.
func BenchmarkRouterObsTry(b *testing.B) {
	names := make([]string, 48)
	for i := range names {
		names[i] = "d" + strconv.Itoa(i)
	}
	o := &routerObs{k: 8, policy: "kvc", decode: names, prefill: []string{"p0"}}
	cands := sampleCands()
	l := &pdLog{ID: 123456, Session: "L1234", Turn: 7, InputTokens: 40160, Policy: "kvc", Tries: []pdTry{},
		Mode: "Direct", DWorker: "d14"}
	var line []byte
	b.ReportAllocs()
	for b.Loop() {
		l.Tries = append(l.Tries[:0], o.try(0, 1234567125*time.Microsecond, cands, 14, spareCands(l.Tries[:0])))
		line = o.enc.encodeLog(l)
	}
	b.ReportMetric(float64(len(line)), "B/line")
}

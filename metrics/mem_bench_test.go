package metrics

// The benchmarks of the memory work (issue 24's 1M-request row): public
// API only, so that the same file runs against the tree before it
// (benchstat old vs new).

import (
	"bytes"
	"testing"
	"time"
)

// BenchmarkSeriesObserve: a decode worker's observations (several per
// second, a few kept per sampled second) and instances.csv's read.
func BenchmarkSeriesObserve(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s := NewSeries("d0", "decode")
		s.SetGrid(time.Second)
		for i := range 1 << 20 {
			t := time.Duration(i) * 300 * time.Millisecond
			s.Observe(t, 40000+i%5000, i%3, i%17)
		}
		var buf bytes.Buffer
		if err := WriteInstances(&buf, []*Series{s}, time.Second, time.Duration(1<<20)*300*time.Millisecond, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLinkRecorder: a million NIC changes (three NICs, transfers
// starting and ending) recorded and written as links.csv.
func BenchmarkLinkRecorder(b *testing.B) {
	b.ReportAllocs()
	nics := []string{"p0/mlx5_0", "d0/mlx5_0", "d1/mlx5_0"}
	var buf bytes.Buffer
	for b.Loop() {
		r := NewLinkRecorder()
		var ids []LinkID
		for _, n := range nics {
			ids = append(ids, r.NIC(n, 25e9))
		}
		for i := range 1 << 20 {
			act := i % 4
			r.Link(time.Duration(i)*137*time.Microsecond, ids[i%3], int64(i%7)*67_108_864, float64(act)*2e10/float64(max(act, 1)), act)
		}
		buf.Reset()
		if err := WriteLinks(&buf, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTallySLO: adding a million requests and computing the SLO
// (allocations: the compact rows' chunks and the quarters' sort).
func BenchmarkTallySLO(b *testing.B) {
	b.ReportAllocs()
	recs := make([]Record, 1<<20)
	for i := range recs {
		recs[i] = Record{ID: int64(i), SessionIdx: int32(i % 40000), Arrival: time.Duration(i) * 7 * time.Millisecond,
			TTFT: time.Duration(i%977) * 311 * time.Microsecond, TPOT: 3 * time.Millisecond, E2E: time.Second, State: StateCompleted, Mode: "Direct"}
	}
	slo := SLO{TTFT: 200 * time.Millisecond, TPOT: 50 * time.Millisecond, Attainment: 0.9}
	for b.Loop() {
		tl := NewTally()
		for i := range recs {
			tl.Add(&recs[i])
		}
		_ = tl.SLO(slo, Summary{EmulatedSeconds: 1000})
	}
}

// BenchmarkRouterRecorderSparse: router events in about one second in
// ten over 400k emulated seconds (the 1M-request run's), then the
// windows written.
func BenchmarkRouterRecorderSparse(b *testing.B) {
	b.ReportAllocs()
	var out bytes.Buffer
	for b.Loop() {
		r := NewRouterRecorder()
		for i := range 40_000 {
			r.Event(time.Duration(i)*10*time.Second+time.Duration(i%7)*time.Second, RouterFallback)
		}
		out.Reset()
		if err := WriteRouterWindowsOf(&out, NewArrivals(), r, 5*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTallySummary: a million completed requests tallied (TTFT
// parts that add up, mostly zero) and summarised.
func BenchmarkTallySummary(b *testing.B) {
	b.ReportAllocs()
	recs := make([]Record, 1<<20)
	for i := range recs {
		ttft := time.Duration(i%977)*311*time.Microsecond + time.Duration(i%13)
		r := Record{ID: int64(i), SessionIdx: int32(i % 40000), Arrival: time.Duration(i) * 7 * time.Millisecond,
			TTFT: ttft, TPOT: 3*time.Millisecond + time.Duration(i%1000), E2E: ttft + time.Second, State: StateCompleted, Mode: "Direct", HasParts: true}
		r.Parts.DPrefill = ttft
		if i%7 == 0 {
			r.Parts.Prefill, r.Parts.Transfer, r.Parts.DPrefill = ttft/2, ttft/4, ttft-ttft/2-ttft/4
		}
		recs[i] = r
	}
	for b.Loop() {
		tl := NewTally()
		for i := range recs {
			tl.Add(&recs[i])
		}
		_ = tl.Summary()
	}
}

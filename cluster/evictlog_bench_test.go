package cluster

import (
	"strconv"
	"testing"
	"time"

	"github.com/pdemu/pdemu/metrics"
)

// BenchmarkEvictionRows: three decode nodes keep 100k evictions.csv rows
// (the 1M-request 1P3D run's count) and the cluster merges them into
// time order at the end, from compact logs (log) or, as before them, from
// a slice of rows per node (slice).
func BenchmarkEvictionRows(b *testing.B) {
	b.Run("log", func(b *testing.B) { benchEvictionRows(b, true) })
	b.Run("slice", func(b *testing.B) { benchEvictionRows(b, false) })
}

func benchEvictionRows(b *testing.B, useLog bool) {
	b.ReportAllocs()
	names := make([]string, 4096)
	for i := range names {
		names[i] = "s" + strconv.Itoa(i)
	}
	causes := []string{"capacity", "session-end", "capacity", "transfer-failed"}
	for b.Loop() {
		runs := make([]evRun, 3)
		n := 0
		for k := range runs {
			l := &evictLog{}
			var rows []metrics.EvictionRow
			for i := range 100_000 / len(runs) {
				r := metrics.EvictionRow{At: time.Duration(i)*4*time.Second + time.Duration(k*977+i%1000)*time.Millisecond,
					Session: names[(i*7+k)%len(names)], Tokens: 20_000 + i%9000, Cause: causes[i%len(causes)], For: int64(i*3 + k)}
				if useLog {
					l.add(r)
				} else {
					rows = append(rows, r)
				}
				n++
			}
			runs[k] = evRun{name: "d" + strconv.Itoa(k), named: true}
			if useLog {
				runs[k].log = l
			} else {
				runs[k].rows = rows
			}
		}
		if out := mergeByTime(runs, n); len(out) != n {
			b.Fatal(len(out))
		}
	}
}

package output

import (
	"math/rand/v2"
	"os"
	"testing"
)

// BenchmarkReorder adds 100k entries that end out of id order within
// windows of 512 (as a loaded run's requests do) through a reorder
// buffer with the default bound; per entry: a 200-byte row from a reused
// buffer and a 700-byte log line.
func BenchmarkReorder(b *testing.B) {
	const n, window = 100_000, 512
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int64, n)
	for i := range order {
		order[i] = int64(i)
	}
	for lo := 0; lo < n; lo += window {
		hi := min(lo+window, n)
		rng.Shuffle(hi-lo, func(i, j int) { order[lo+i], order[lo+j] = order[lo+j], order[lo+i] })
	}
	row, log := make([]byte, 200), make([]byte, 700)
	spill := func() (*os.File, error) { return os.CreateTemp(b.TempDir(), "spill-*") }
	b.ReportAllocs()
	for b.Loop() {
		emitted := 0
		ro := newReorder(0, DefaultReorderBytes, func(int64, []byte, []byte) error { emitted++; return nil }, spill)
		for _, id := range order {
			if err := ro.add(id, row, log); err != nil {
				b.Fatal(err)
			}
		}
		if err := ro.finish(); err != nil || emitted != n {
			b.Fatal(err, emitted)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}

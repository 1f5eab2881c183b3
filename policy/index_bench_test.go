package policy

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// benchIndex is what the benchmarks drive: the per-segment ResidentIndex
// and the per-block indexV1 it replaced (compare them with
// benchstat -col /impl).
type benchIndex interface {
	Set(d int, s int32, blocks []uint64)
	SetImmutable(d int, s int32, blocks []uint64)
	Remove(d int, s int32)
	OverlapOwned(blocks []uint64, d int, s int32, out []int) int
	Blocks() int
	WorkerBlocks(d int) int
}

var benchImpls = []struct {
	name string
	new  func(n int) benchIndex
}{
	{"v1", func(n int) benchIndex { return newIndexV1(n) }},
	{"seg", func(n int) benchIndex { return NewResidentIndex(n) }},
}

// BenchmarkIndexShared measures the resident index with blocks shared by
// a few workers of a large cluster (sessions that moved, or were seeded on
// several workers): every session's 256 blocks are recorded on two
// workers. heap-B/block is the heap the populated index holds per
// recorded block (its own copies of the owner lists included); the loop
// records every session on a third worker and removes it again, reported
// as blocks/s.
func BenchmarkIndexShared(b *testing.B) {
	const sessions, blocks = 512, 256
	for _, impl := range benchImpls {
		for _, n := range []int{8, 192, 1024} {
			b.Run(fmt.Sprintf("impl=%s/workers=%d", impl.name, n), func(b *testing.B) {
				lists := make([][]uint64, sessions)
				for s := range lists {
					lists[s] = chainBlocks(int32(s), blocks)
				}
				var m0, m1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				x := impl.new(n)
				for s, l := range lists {
					x.Set(s%n, int32(s), l)
					x.Set((s+1)%n, int32(s), l)
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				if x.Blocks() != sessions*blocks {
					b.Fatalf("%d blocks recorded, want %d", x.Blocks(), sessions*blocks)
				}
				heap := float64(m1.HeapAlloc-m0.HeapAlloc) / float64(x.Blocks())
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					s := i % sessions
					x.Set((s+2)%n, int32(s), lists[s])
					x.Remove((s+2)%n, int32(s))
					i++
				}
				b.ReportMetric(float64(b.N)*2*blocks/b.Elapsed().Seconds(), "blocks/s")
				b.ReportMetric(heap, "heap-B/block") // after b.Loop, which resets metrics
				runtime.KeepAlive(x)
			})
		}
	}
}

// agenticTurns returns the requests of an agentic workload shaped like
// ../shared/peers/blis's workload A: sessions of turns whose prompts
// keep the previous prompt but its last blocks (cut) and append new ones,
// interleaved turn by turn.
func agenticTurns(sessions, turns, first, grow, cut int) (sess []int32, reqs [][]uint64) {
	rng := rand.New(rand.NewPCG(1, 2))
	next := uint64(1)
	prev := make([][]uint64, sessions)
	for t := 0; t < turns; t++ {
		for s := 0; s < sessions; s++ {
			keep := max(0, len(prev[s])-1-rng.IntN(cut+1))
			n := grow/2 + rng.IntN(grow+1)
			if t == 0 {
				n = first
			}
			l := slices.Clip(slices.Clone(prev[s][:keep]))
			for range n {
				l = append(l, next)
				next++
			}
			prev[s] = l
			sess = append(sess, int32(s))
			reqs = append(reqs, l)
		}
	}
	return sess, reqs
}

// BenchmarkIndexAgentic replays an agentic 1P3D router's index traffic
// on 3 decode workers: per request Overlap twice (the decision log's
// Explain and Route, hinted by the session's pinned worker), a record on
// the pinned worker (a new worker for 1 request in 16), and evictions of
// the least recently used sessions when a worker's records exceed its
// capacity (a third of the sessions' final length each: most sessions are
// evicted and recorded again, as on the shared trace). ns/request is per
// routed request.
func BenchmarkIndexAgentic(b *testing.B) {
	const workers, sessions, turns = 3, 30, 60
	sess, reqs := agenticTurns(sessions, turns, 260, 50, 12)
	capacity := sessions * (260 + 50*turns) / 3 / 3
	for _, impl := range benchImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			out := make([]int, workers)
			var ops int
			for b.Loop() {
				x := impl.new(workers)
				pin := make([]int, sessions)
				used := make([]int, workers)
				lru := make([][]int32, workers) // per worker, least recent first
				recorded := make([][]int, workers)
				for d := range recorded {
					recorded[d] = make([]int, sessions)
				}
				for i, blocks := range reqs {
					s := sess[i]
					clear(out)
					x.OverlapOwned(blocks, pin[s], s, out)
					clear(out)
					x.OverlapOwned(blocks, pin[s], s, out)
					d := pin[s]
					if i%16 == 5 {
						d = (d + 1) % workers
					}
					pin[s] = d
					x.SetImmutable(d, s, blocks)
					used[d] += len(blocks) - recorded[d][s]
					recorded[d][s] = len(blocks)
					lru[d] = append(slices.DeleteFunc(lru[d], func(t int32) bool { return t == s }), s)
					for used[d] > capacity && len(lru[d]) > 1 {
						v := lru[d][0]
						lru[d] = lru[d][1:]
						x.Remove(d, v)
						used[d] -= recorded[d][v]
						recorded[d][v] = 0
					}
					ops++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops), "ns/request")
		})
	}
}

// BenchmarkIndexStream replays the index traffic of a long stream of
// sessions (sessionStream: the 1M-request 1P3D run's shape, 10 sessions
// at a time of 24 turns of 30 new blocks, one turn in 5 moved to another
// worker) on one index kept across iterations, so that it runs in its
// steady state of compactions; ns/turn is per recorded turn. The
// sub-benchmarks set keepDead, the dead positions kept for revival.
func BenchmarkIndexStream(b *testing.B) {
	for _, kd := range []int{1 << 12, 1 << 14, keepDead} {
		b.Run(fmt.Sprintf("keepDead=%d", kd), func(b *testing.B) {
			withKeepDead(b, kd)
			x := NewResidentIndex(3)
			sessionStream(b, x, nil, 200, 10, 24, 1) // warm up
			b.ReportAllocs()
			turns := 0
			for b.Loop() {
				sessionStream(b, x, nil, 20, 10, 24, 1)
				turns += 20 * 24
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(turns), "ns/turn")
		})
	}
}

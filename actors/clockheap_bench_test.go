package actors

import (
	"testing"
	"time"

	"github.com/pdemu/pdemu/internal/minheap"
)

// The virtual clock's hot path is a push per Send and a pop per delivery
// on a heap of the events in flight. These benchmarks compare its
// specialised vheap with the generic minheap.Heap on the same workload
// (a steady heap of n events, push one and pop the least); the clock
// keeps whichever the benchmark says is faster.

func fillEvents(n int, push func(vkey)) uint64 {
	var seq uint64
	for i := range n {
		seq++
		push(vkey{at: time.Duration(i * 7919 % n), from: int32(i % 13), seq: seq})
	}
	return seq
}

func benchClockHeap(b *testing.B, n int, push func(vkey), pop func() vkey) {
	seq := fillEvents(n, push)
	b.ReportAllocs()
	for b.Loop() {
		ev := pop()
		seq++
		ev.at += time.Duration(seq % 977)
		ev.seq = seq
		push(ev)
	}
}

func BenchmarkClockHeap(b *testing.B) {
	for _, n := range []int{64, 4096} {
		b.Run("vheap/"+itoa(n), func(b *testing.B) {
			var h vheap
			benchClockHeap(b, n, h.push, h.pop)
		})
		b.Run("minheap/"+itoa(n), func(b *testing.B) {
			h := minheap.New(lessVkey)
			benchClockHeap(b, n, h.Push, h.Pop)
		})
	}
}

func itoa(n int) string {
	if n >= 1024 {
		return string(rune('0'+n/1024/10%10)) + string(rune('0'+n/1024%10)) + "k"
	}
	return string(rune('0'+n/10)) + string(rune('0'+n%10))
}

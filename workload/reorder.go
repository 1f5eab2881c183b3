package workload

import (
	"time"

	"github.com/pdemu/pdemu/internal/minheap"
)

// reorder is a bounded buffer that emits records sorted by time, holding
// each one until a record at least window later was read (or input ended).
// Make one with newReorder.
type reorder[T any] struct {
	window  time.Duration
	h       minheap.Heap[timed[T]] // by time, then arrival order
	seq     int64
	maxSeen time.Duration
	seen    bool
	lastOut time.Duration
	out     bool
}

type timed[T any] struct {
	at  time.Duration
	seq int64
	v   T
}

func newReorder[T any](window time.Duration) reorder[T] {
	return reorder[T]{window: window, h: minheap.Heap[timed[T]]{Less: lessTimed[T]}}
}

func lessTimed[T any](a, b *timed[T]) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// tooLate reports whether a record at time at can no longer be emitted in order.
func (q *reorder[T]) tooLate(at time.Duration) bool { return q.out && at < q.lastOut }

func (q *reorder[T]) push(at time.Duration, v T) {
	if !q.seen || at > q.maxSeen {
		q.maxSeen, q.seen = at, true
	}
	q.h.Push(timed[T]{at: at, seq: q.seq, v: v})
	q.seq++
}

// pop returns the earliest record if it is ready (or all input was read).
func (q *reorder[T]) pop(eof bool) (T, bool) {
	var zero T
	if q.h.Len() == 0 || (!eof && q.h.Min().at+q.window > q.maxSeen) {
		return zero, false
	}
	top := q.h.Pop()
	q.lastOut, q.out = top.at, true
	return top.v, true
}

// expiry is a FIFO of (time, key) used to forget idle sessions. Entries are
// pushed in non-decreasing time order; stale entries (the key was seen again
// later) are recognised by the caller.
type expiry[K comparable] struct {
	q    []expEntry[K]
	head int
}

type expEntry[K comparable] struct {
	at  time.Duration
	key K
}

func (e *expiry[K]) push(at time.Duration, k K) {
	if e.head > 1024 && e.head*2 > len(e.q) {
		n := copy(e.q, e.q[e.head:])
		clear(e.q[n:])
		e.q = e.q[:n]
		e.head = 0
	}
	e.q = append(e.q, expEntry[K]{at: at, key: k})
}

// expire calls f for every entry older than before, oldest first.
func (e *expiry[K]) expire(before time.Duration, f func(at time.Duration, k K)) {
	for e.head < len(e.q) && e.q[e.head].at < before {
		ent := e.q[e.head]
		e.q[e.head] = expEntry[K]{}
		e.head++
		f(ent.at, ent.key)
	}
}

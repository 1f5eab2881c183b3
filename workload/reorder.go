package workload

import (
	"time"
)

// reorder is a bounded buffer that emits records sorted by time, holding
// each one until a record at least window later was read (or input ended).
type reorder[T any] struct {
	window  time.Duration
	h       []timed[T]
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

func (q *reorder[T]) less(i, j int) bool {
	if q.h[i].at != q.h[j].at {
		return q.h[i].at < q.h[j].at
	}
	return q.h[i].seq < q.h[j].seq
}

// tooLate reports whether a record at time at can no longer be emitted in order.
func (q *reorder[T]) tooLate(at time.Duration) bool { return q.out && at < q.lastOut }

func (q *reorder[T]) push(at time.Duration, v T) {
	if !q.seen || at > q.maxSeen {
		q.maxSeen, q.seen = at, true
	}
	q.h = append(q.h, timed[T]{at: at, seq: q.seq, v: v})
	q.seq++
	for i := len(q.h) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

// pop returns the earliest record if it is ready (or all input was read).
func (q *reorder[T]) pop(eof bool) (T, bool) {
	var zero T
	if len(q.h) == 0 || (!eof && q.h[0].at+q.window > q.maxSeen) {
		return zero, false
	}
	top := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h[n] = timed[T]{}
	q.h = q.h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
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

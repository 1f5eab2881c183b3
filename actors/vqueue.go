package actors

import (
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pdemu/pdemu/internal/freelist"
)

// vqueue holds the virtual clock's pending messages and hands them out a
// step at a time, in the order (due time, sender, sender's send counter)
// of effect.Stamp.
//
// Two things keep it cheap per message:
//
//   - The order lives in pointer-free keys (vkey); the message and its
//     recipient wait in a slot the key names. The heap's swaps then move
//     24 bytes with no GC write barrier (a 48-byte event holding a PID and
//     an interface took a write barrier on every swap while the collector
//     was marking: 5 % of BenchmarkPerMessage/default's CPU), and the
//     collector does not scan the heap.
//   - A message sent with no delay during a step is due at that step's
//     time, before anything in the heap: it goes on the lane, a plain
//     slice, instead of the heap. The next step takes the lane whole and
//     sorts it by (sender, counter); nothing is pushed or popped. Most
//     messages are such (the router's admission round trips alone are 68 %
//     of them at 64 workers).
//
// The lane only ever holds keys of one due time: a zero-delay send due at
// another time than the lane's (a send between runs after the clock moved)
// goes to the heap instead, so take is exact whatever the caller does.
type vqueue struct {
	heap  vheap
	lane  []vkey
	slots []vslot
	free  []uint32
	keys  []vkey // take's scratch
	// batchBuf is a VirtualClock's batch buffer while the queue waits
	// for its next clock (adopt, handBack).
	batchBuf []vslot
}

// vkey is a pending message's place in the delivery order (effect.Stamp's
// fields) and the slot holding it.
type vkey struct {
	at   time.Duration
	seq  uint64
	from int32
	slot uint32
}

// before is effect.Stamp.Before on vkeys (TestVkeyOrder). It repeats
// Before's three comparisons on purpose: a vkey is a Stamp's fields and a
// slot in 24 bytes (a Stamp and a slot would take 32), and passing the
// fields to one shared comparison loads all six before comparing,
// 12 % slower on BenchmarkClockHeap/vheap/64 (benchstat, 6 runs).
func (a *vkey) before(b *vkey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.from != b.from {
		return a.from < b.from
	}
	return a.seq < b.seq
}

// vslot is a pending message and its recipient.
type vslot struct {
	to  *actor.PID
	msg any
}

// len is the number of pending messages.
func (q *vqueue) len() int { return len(q.heap) + len(q.lane) }

// push queues msg for to, due at at; now says it was sent with no delay
// (due at the current step's time).
func (q *vqueue) push(at time.Duration, from int32, seq uint64, to *actor.PID, msg any, now bool) {
	s, ok := freelist.Pop(&q.free)
	if ok {
		q.slots[s] = vslot{to: to, msg: msg}
	} else {
		s = uint32(len(q.slots))
		q.slots = append(q.slots, vslot{to: to, msg: msg})
	}
	k := vkey{at: at, seq: seq, from: from, slot: s}
	if now && (len(q.lane) == 0 || q.lane[0].at == at) {
		q.lane = append(q.lane, k)
		return
	}
	q.heap.push(k)
}

// next is the due time of the earliest pending message (ok false: none).
func (q *vqueue) next() (at time.Duration, ok bool) {
	switch {
	case len(q.lane) > 0 && (len(q.heap) == 0 || q.lane[0].at <= q.heap[0].at):
		return q.lane[0].at, true
	case len(q.heap) > 0:
		return q.heap[0].at, true
	}
	return 0, false
}

// take appends every message due at at (next's time) to batch, in
// delivery order, and frees their slots. A step's keys come from the
// heap alone (already in order as they are popped), from the lane alone
// (sorted in place), or, rarely, from both (merged by sorting a copy).
func (q *vqueue) take(at time.Duration, batch []vslot) []vslot {
	fromLane := len(q.lane) > 0 && q.lane[0].at == at
	fromHeap := len(q.heap) > 0 && q.heap[0].at == at
	switch {
	case !fromLane:
		for len(q.heap) > 0 && q.heap[0].at == at {
			batch = q.move(q.heap.pop(), batch)
		}
	case !fromHeap:
		if len(q.lane) > 1 {
			sortKeys(q.lane)
		}
		for _, k := range q.lane {
			batch = q.move(k, batch)
		}
		q.lane = q.lane[:0]
	default:
		keys := append(q.keys[:0], q.lane...)
		q.lane = q.lane[:0]
		for len(q.heap) > 0 && q.heap[0].at == at {
			keys = append(keys, q.heap.pop())
		}
		sortKeys(keys)
		for _, k := range keys {
			batch = q.move(k, batch)
		}
		q.keys = keys[:0]
	}
	return batch
}

// move appends k's message to batch and frees its slot.
func (q *vqueue) move(k vkey, batch []vslot) []vslot {
	s := &q.slots[k.slot]
	batch = append(batch, *s)
	*s = vslot{} // let the GC have the message
	q.free = append(q.free, k.slot)
	return batch
}

// sortKeys sorts keys of one due time into delivery order: by insertion
// for the few messages of a typical step (a node's sends are in counter
// order already), pdqsort beyond.
func sortKeys(keys []vkey) {
	if len(keys) > 16 {
		slices.SortFunc(keys, func(a, b vkey) int {
			switch {
			case a.before(&b):
				return -1
			case b.before(&a):
				return 1
			}
			return 0
		})
		return
	}
	for i := 1; i < len(keys); i++ {
		k := keys[i]
		j := i
		for ; j > 0 && k.before(&keys[j-1]); j-- {
			keys[j] = keys[j-1]
		}
		keys[j] = k
	}
}

// vheap is a binary min-heap of vkeys in delivery order, a total order
// ((from, seq) is unique per send), so the delivery order does not depend
// on the heap's shape. It is typed rather than a
// container/heap.Interface (heap.Push and heap.Pop box every key in an
// interface) and kept rather than the generic internal/minheap:
// BenchmarkClockHeap, 8 alternating runs, medians, had the generic heap's
// indirect Less 1.10x slower on 64 events in flight and 1.46x on 4,096.
// pop moves a hole down to a leaf and lets the last key climb back from
// there (Floyd's bottom-up sift: one comparison per level instead of two,
// and no swaps); a push rarely climbs more than a level and swaps.
type vheap []vkey

func (h *vheap) push(k vkey) {
	*h = append(*h, k)
	q := *h
	for j := len(q) - 1; j > 0; {
		i := (j - 1) / 2 // parent
		if !q[j].before(&q[i]) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

// pop removes and returns the least key (h must not be empty).
func (h *vheap) pop() vkey {
	q := *h
	n := len(q) - 1
	top := q[0]
	k := q[n]
	q = q[:n]
	*h = q
	if n == 0 {
		return top
	}
	// The hole goes down to a leaf along the lesser children (one
	// comparison per level), then the last key, which belongs near the
	// bottom, climbs from there (rarely more than a level).
	i := 0
	for {
		m := 2*i + 1 // the lesser child
		if m >= n {
			break
		}
		if r := m + 1; r < n && q[r].before(&q[m]) {
			m = r
		}
		q[i] = q[m]
		i = m
	}
	for i > 0 {
		p := (i - 1) / 2
		if !k.before(&q[p]) {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = k
	return top
}

// adopt makes the clock's queue (not yet used) the empty queue q, whose
// buffers a previous clock handed back: a run's queue regrew them from
// nothing, ~30 allocations of every run.
func (c *VirtualClock) adopt(q *vqueue) {
	c.mu.Lock()
	if c.q.len() == 0 && len(c.q.slots) == 0 {
		c.q, *q = *q, vqueue{}
		c.batch, q.batchBuf = q.batchBuf[:0], nil
	}
	c.mu.Unlock()
}

// handBack empties the clock's queue (a stopped run may leave messages
// in it: they are dropped with their slots) and moves its buffers to q.
func (c *VirtualClock) handBack(q *vqueue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.q.slots)
	clear(c.batch)
	*q = vqueue{heap: c.q.heap[:0], lane: c.q.lane[:0], slots: c.q.slots[:0], free: c.q.free[:0], keys: c.q.keys[:0], batchBuf: c.batch[:0]}
	c.q, c.batch = vqueue{}, nil
}

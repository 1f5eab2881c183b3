// Package idmap holds the maps keyed by a run's dense integer ids: Window
// for request ids (int64, dense from 0, each live for a while and ending
// roughly in id order: the requests in flight) and Dense for session
// indices (int32, dense from 0: workload.Request's contract). Each is a
// map in behaviour, any key allowed: keys outside the dense layout go to
// an ordinary map, so only the cost depends on the layout, never the
// result. They replaced Go maps on the per-request path, whose hashing,
// probing and growth were ~10 % of a Mooncake replay.
//
// Neither is safe for concurrent use.
package idmap

import (
	"maps"
	"slices"
)

// Window maps int64 ids to V. Ids within a span of windowMax from the
// lowest one it holds live in a ring indexed by id - lo; others in a map.
// The zero Window is empty and ready.
type Window[V any] struct {
	ring   []slot[V] // len 0 or a power of two; ring[head] is id lo
	head   int
	lo, hi int64 // the ring's lowest id (when inRing > 0) and a bound on its highest
	inRing int
	far    map[int64]V
}

type slot[V any] struct {
	v   V
	set bool
}

// windowMax bounds the ring's slots.
const windowMax = 1 << 16

// Len is the number of ids held.
func (w *Window[V]) Len() int { return w.inRing + len(w.far) }

// at returns id's ring slot, or nil when id lies outside the ring.
func (w *Window[V]) at(id int64) *slot[V] {
	if d := id - w.lo; d >= 0 && d < int64(len(w.ring)) {
		return &w.ring[(w.head+int(d))&(len(w.ring)-1)]
	}
	return nil
}

// Get returns id's value and whether id is held.
func (w *Window[V]) Get(id int64) (V, bool) {
	if s := w.at(id); s != nil && s.set {
		return s.v, true
	}
	if len(w.far) > 0 {
		v, ok := w.far[id]
		return v, ok
	}
	var zero V
	return zero, false
}

// Put sets id's value.
func (w *Window[V]) Put(id int64, v V) {
	if s := w.place(id); s != nil {
		if !s.set {
			w.inRing++
		}
		*s = slot[V]{v: v, set: true}
		w.hi = max(w.hi, id)
		if len(w.far) > 0 {
			delete(w.far, id)
		}
		return
	}
	if w.far == nil {
		w.far = map[int64]V{}
	}
	w.far[id] = v
}

// place returns the ring slot for id, moving or growing the ring to
// reach it when its span stays within windowMax; nil: id goes to far.
func (w *Window[V]) place(id int64) *slot[V] {
	if w.inRing == 0 { // an empty ring starts at id
		if len(w.ring) == 0 {
			w.ring = make([]slot[V], 64)
		}
		w.head, w.lo, w.hi = 0, id, id
		return &w.ring[0]
	}
	lo, hi := min(w.lo, id), max(w.hi, id)
	span := hi - lo + 1
	if span > windowMax || span <= 0 {
		return nil
	}
	if span > int64(len(w.ring)) {
		w.grow(int(span), lo)
	} else if id < w.lo { // the slots past hi are free: move the start down
		w.head = (w.head - int(w.lo-id)) & (len(w.ring) - 1)
		w.lo = id
	}
	return w.at(id)
}

// grow lays the ring out again from lo (<= w.lo) with room for n slots.
func (w *Window[V]) grow(n int, lo int64) {
	size := len(w.ring)
	for size < n {
		size *= 2
	}
	ring := make([]slot[V], size)
	off := int(w.lo - lo)
	for i := 0; i <= int(w.hi-w.lo) && i < len(w.ring); i++ {
		ring[off+i] = w.ring[(w.head+i)&(len(w.ring)-1)]
	}
	w.ring, w.head, w.lo = ring, 0, lo
}

// Delete removes id (nothing when it is not held).
func (w *Window[V]) Delete(id int64) {
	if s := w.at(id); s != nil && s.set {
		*s = slot[V]{}
		w.inRing--
		if id == w.lo { // the ring starts at its lowest id held
			for w.inRing > 0 && !w.ring[w.head].set {
				w.head = (w.head + 1) & (len(w.ring) - 1)
				w.lo++
			}
		}
		return
	}
	if len(w.far) > 0 {
		delete(w.far, id)
	}
}

// Ascend calls f for each id held and its value, in ascending id order,
// until f returns false. f must not change w.
func (w *Window[V]) Ascend(f func(id int64, v V) bool) {
	ids := slices.Sorted(maps.Keys(w.far))
	k := 0
	for i := 0; w.inRing > 0 && i <= int(w.hi-w.lo) && i < len(w.ring); i++ {
		s := &w.ring[(w.head+i)&(len(w.ring)-1)]
		if !s.set {
			continue
		}
		id := w.lo + int64(i)
		for ; k < len(ids) && ids[k] < id; k++ {
			if !f(ids[k], w.far[ids[k]]) {
				return
			}
		}
		if !f(id, s.v) {
			return
		}
	}
	for ; k < len(ids); k++ {
		if !f(ids[k], w.far[ids[k]]) {
			return
		}
	}
}

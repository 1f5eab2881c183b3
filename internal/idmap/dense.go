package idmap

import (
	"iter"
	"maps"
	"slices"
)

// Dense maps int32 indices to V: indices in [0, denseMax) index a slice
// (which grows to the highest one put), others a map. The zero Dense is
// empty and ready.
type Dense[V any] struct {
	s     []slot[V]
	n     int // set slots of s
	other map[int32]V
}

// denseMax bounds the slice's slots.
const denseMax = 1 << 22

// Len is the number of indices held.
func (d *Dense[V]) Len() int { return d.n + len(d.other) }

// Get returns i's value and whether i is held.
func (d *Dense[V]) Get(i int32) (V, bool) {
	if i >= 0 && int(i) < len(d.s) {
		s := &d.s[i]
		return s.v, s.set
	}
	if i >= 0 && i < denseMax || d.other == nil {
		var zero V
		return zero, false
	}
	v, ok := d.other[i]
	return v, ok
}

// Put sets i's value.
func (d *Dense[V]) Put(i int32, v V) {
	if i < 0 || i >= denseMax {
		if d.other == nil {
			d.other = map[int32]V{}
		}
		d.other[i] = v
		return
	}
	if int(i) >= len(d.s) {
		d.s = append(d.s, make([]slot[V], int(i)+1-len(d.s))...)
	}
	s := &d.s[i]
	if !s.set {
		d.n++
	}
	*s = slot[V]{v: v, set: true}
}

// Delete removes i (nothing when it is not held).
func (d *Dense[V]) Delete(i int32) {
	if i >= 0 && int(i) < len(d.s) {
		if d.s[i].set {
			d.s[i] = slot[V]{}
			d.n--
		}
		return
	}
	if d.other != nil {
		delete(d.other, i)
	}
}

// All yields the indices held and their values in ascending index order.
// The Dense must not change while it runs.
func (d *Dense[V]) All() iter.Seq2[int32, V] {
	return func(yield func(int32, V) bool) {
		other := slices.Sorted(maps.Keys(d.other))
		k := 0
		for ; k < len(other) && other[k] < 0; k++ {
			if !yield(other[k], d.other[other[k]]) {
				return
			}
		}
		for i := range d.s {
			if s := &d.s[i]; s.set && !yield(int32(i), s.v) {
				return
			}
		}
		for ; k < len(other); k++ {
			if !yield(other[k], d.other[other[k]]) {
				return
			}
		}
	}
}

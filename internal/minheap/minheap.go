// Package minheap is pdemu's one binary min-heap, typed by a type
// parameter so that values are stored unboxed (container/heap's
// interface boxes every non-pointer value it pushes or pops).
//
// Contract: Pop returns the least element by Less. The sift-up and
// sift-down steps are container/heap's, step for step, so elements that
// compare equal come out in the order container/heap would give them:
// replacing a container/heap with a Heap keeps a run's outputs
// byte-identical even where the order is not total.
package minheap

// Heap is a min-heap of T ordered by Less (a strict weak order). The zero
// value is not usable: set Less (or use New).
type Heap[T any] struct {
	Less  func(a, b *T) bool
	items []T
}

// New returns an empty heap ordered by less.
func New[T any](less func(a, b *T) bool) *Heap[T] { return &Heap[T]{Less: less} }

// Len is the number of elements.
func (h *Heap[T]) Len() int { return len(h.items) }

// Min is the least element (h must not be empty); the caller may change
// it in place and then call Fix(0).
func (h *Heap[T]) Min() *T { return &h.items[0] }

// Items are the elements in heap order (read-only: changing one breaks
// the heap unless Fix is called).
func (h *Heap[T]) Items() []T { return h.items }

// Push adds v.
func (h *Heap[T]) Push(v T) {
	h.items = append(h.items, v)
	h.up(len(h.items) - 1)
}

// Pop removes and returns the least element (h must not be empty).
func (h *Heap[T]) Pop() T {
	n := len(h.items) - 1
	h.items[0], h.items[n] = h.items[n], h.items[0]
	h.down(0, n)
	v := h.items[n]
	var zero T
	h.items[n] = zero // let the GC have what it pointed to
	h.items = h.items[:n]
	return v
}

// Fix restores the order after the element at index i changed.
func (h *Heap[T]) Fix(i int) {
	if !h.down(i, len(h.items)) {
		h.up(i)
	}
}

// Init orders items (taken over, not copied) into a heap.
func (h *Heap[T]) Init(items []T) {
	h.items = items
	n := len(items)
	for i := n/2 - 1; i >= 0; i-- {
		h.down(i, n)
	}
}

// Reset empties the heap, keeping its memory.
func (h *Heap[T]) Reset() {
	clear(h.items)
	h.items = h.items[:0]
}

func (h *Heap[T]) up(j int) {
	q := h.items
	for {
		i := (j - 1) / 2 // parent
		if i == j || !h.Less(&q[j], &q[i]) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

func (h *Heap[T]) down(i0, n int) bool {
	q := h.items
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h.Less(&q[j2], &q[j1]) {
			j = j2 // right child
		}
		if !h.Less(&q[j], &q[i]) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	return i > i0
}

// Package freelist is the one free-list idiom of pdemu's slabs: the
// segment tables of gpu's block LRU and policy's resident index, the
// router's dispatch slab, the loaders' record pools and the virtual
// clock's message slots keep the ids or pointers of freed entries in a
// slice and take the last one back before growing.
//
// Contract: Pop(&s) removes and returns s's last element, leaving the
// zero value in its old slot (so a freed pointer is not kept alive by the
// list's backing array), and reports false, with the zero value, when s
// is empty. It allocates nothing and inlines.
package freelist

// Pop removes and returns the last element of *s (LIFO: the most
// recently freed entry, the one most likely still in cache).
func Pop[T any](s *[]T) (T, bool) {
	var zero T
	n := len(*s)
	if n == 0 {
		return zero, false
	}
	v := (*s)[n-1]
	(*s)[n-1] = zero
	*s = (*s)[:n-1]
	return v, true
}

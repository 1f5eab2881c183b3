package output

import "slices"

// pending holds the reorder buffer's entries in memory: a ring indexed by
// id - lo for ids within ringMax of the lowest one that can come (ids are
// dense and end roughly in order: most waiting entries are near it), and
// a map for those beyond. It replaced a map of every entry (its inserts,
// deletes and rehashes were most of reorder.add on runs that end out of
// order). Contract: no entry below the id last passed to take is ever
// put (reorder keeps only ids >= next, and next only grows).
type pending struct {
	lo   int64   // the id of ring[head]
	head int     // ring's slot of lo
	ring []entry // len 0 or a power of two
	far  map[int64]entry
	n    int // entries held
}

// ringMax bounds the ring's slots (56 bytes each: 3.5 MB at most).
const ringMax = 1 << 16

// put holds e for id (>= every id taken).
func (p *pending) put(id int64, e entry) {
	e.set = true
	p.n++
	d := id - p.lo
	if d >= int64(len(p.ring)) && d < ringMax {
		p.grow(int(d) + 1)
	}
	if d < int64(len(p.ring)) {
		p.ring[(p.head+int(d))&(len(p.ring)-1)] = e
		return
	}
	if p.far == nil {
		p.far = map[int64]entry{}
	}
	p.far[id] = e
}

// grow re-lays the ring out from head with room for at least n slots.
func (p *pending) grow(n int) {
	size := max(len(p.ring), 64)
	for size < n {
		size *= 2
	}
	ring := make([]entry, size)
	for i := range p.ring {
		ring[i] = p.ring[(p.head+i)&(len(p.ring)-1)]
	}
	p.ring, p.head = ring, 0
}

// take removes and returns id's entry; ids below id can no longer come.
func (p *pending) take(id int64) (entry, bool) {
	if d := id - p.lo; d > 0 {
		if d >= int64(len(p.ring)) {
			p.head = 0 // every slot is behind id: all empty
		} else {
			p.head = (p.head + int(d)) & (len(p.ring) - 1)
		}
		p.lo = id
	}
	if len(p.ring) > 0 && p.ring[p.head].set {
		e := p.ring[p.head]
		p.ring[p.head] = entry{}
		p.n--
		return e, true
	}
	if e, ok := p.far[id]; ok {
		delete(p.far, id)
		p.n--
		return e, true
	}
	return entry{}, false
}

// get returns id's entry without removing it.
func (p *pending) get(id int64) entry {
	if d := id - p.lo; d >= 0 && d < int64(len(p.ring)) {
		if e := p.ring[(p.head+int(d))&(len(p.ring)-1)]; e.set {
			return e
		}
	}
	return p.far[id]
}

// ids returns the held ids, ascending.
func (p *pending) ids() []int64 {
	ids := make([]int64, 0, p.n)
	for i := range p.ring {
		if p.ring[(p.head+i)&(len(p.ring)-1)].set {
			ids = append(ids, p.lo+int64(i))
		}
	}
	for id := range p.far {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// reset drops every entry and the memory that held them.
func (p *pending) reset() { p.ring, p.far, p.head, p.n = nil, nil, 0, 0 }

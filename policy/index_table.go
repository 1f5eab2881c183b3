package policy

import (
	"cmp"
	"iter"
	"slices"
)

// The resident index's hash table (hash → arena positions) and arena
// compaction.
//
// The table is open addressing with linear probing and Fibonacci hashing
// (trace hash ids can be small consecutive integers). A slot is 8 bytes —
// the top 32 bits of the key's hash and the position + 1 (0: empty) — and a
// candidate is confirmed by comparing the arena's key at its position.
// Every arena position has exactly one entry and nothing is deleted: a
// position whose segment no longer covers it is dead, and is revived when
// its hash comes back (create), or dropped by the next compaction, which
// rebuilds the table from the live positions.

type tabSlot struct {
	fp  uint32 // top 32 bits of key·φ
	pos int32  // position + 1; 0 = empty
}

func tabHash(k uint64) uint32 { return uint32((k * golden) >> 32) }

func (x *ResidentIndex) home(fp uint32) uint32 { return fp >> (32 - x.tbits) }

// The filter is a bit per 1/4 table slot, set for every hash with an
// entry (rebuilt with the table): a clear bit proves a hash has no
// position with one load from a small array, which is what most lookups
// of a request whose session's chain was removed are. Its index is the
// top tbits+2 bits of the table hash, so it is rebuilt from the entries'
// fingerprints alone.
func (x *ResidentIndex) filterBit(k uint64) (int, uint64) {
	return filterAt(tabHash(k), x.tbits)
}

func filterAt(fp uint32, tbits uint) (int, uint64) {
	h := fp >> (32 - tbits - 2)
	return int(h >> 6), 1 << (h & 63)
}

// maybe reports whether hash k may have a table entry.
func (x *ResidentIndex) maybe(k uint64) bool {
	w, b := x.filterBit(k)
	return x.filt[w]&b != 0
}

func (x *ResidentIndex) filterAdd(k uint64) {
	w, b := x.filterBit(k)
	x.filt[w] |= b
}

// first returns the position of hash k's first entry, or -1. It is k's
// only position unless that position is flagged posDup.
func (x *ResidentIndex) first(k uint64) int32 {
	if !x.maybe(k) {
		return -1
	}
	fp := tabHash(k)
	_, p := x.probe(k, fp, x.home(fp))
	return p
}

// probe returns the first table slot from i on (in probe order) that
// holds a position of hash k (fingerprint fp), and that position; or the
// empty slot that ends k's probe run, and -1.
func (x *ResidentIndex) probe(k uint64, fp uint32, i uint32) (uint32, int32) {
	for ; ; i = (i + 1) & x.tmask {
		e := x.tab[i]
		if e.pos == 0 {
			return i, -1
		}
		if e.fp == fp && x.keys[e.pos-1] == k {
			return i, e.pos - 1
		}
	}
}

// entries yields every position of hash k, live or dead (the slow path of
// hashes at several positions).
func (x *ResidentIndex) entries(k uint64) iter.Seq[int32] {
	return func(yield func(int32) bool) {
		fp := tabHash(k)
		for i, p := x.probe(k, fp, x.home(fp)); p >= 0 && yield(p); i, p = x.probe(k, fp, (i+1)&x.tmask) {
		}
	}
}

// place returns a dead position of hash k below busy (positions from busy
// on belong to the run being created), or appends k to the arena, gives
// the new position an entry and returns -1. A hash that gets a second
// entry has all its positions flagged posDup, and its canonical context
// recorded if it is resident.
func (x *ResidentIndex) place(k uint64, busy int32) int32 {
	fp := tabHash(k)
	i := x.home(fp)
	others, live := 0, int32(-1)
	// The probe reads hoisted slices (the fields were reloaded at every
	// step).
	tab, keys, mask := x.tab, x.keys, x.tmask
	for ; tab[i].pos != 0; i = (i + 1) & mask {
		e := tab[i]
		if e.fp != fp || keys[e.pos-1] != k {
			continue
		}
		p := e.pos - 1
		if p < busy {
			if !x.valid(p) {
				return p
			}
			live = p
		}
		others++
	}
	np := int32(len(x.keys))
	x.keys = append(x.keys, k)
	x.pseg = append(x.pseg, 0)
	x.flag = append(x.flag, 0)
	x.tab[i] = tabSlot{fp: fp, pos: np + 1}
	x.filterAdd(k)
	if others == 0 {
		return -1
	}
	if _, ok := x.canon[k]; !ok && live >= 0 {
		// Resident at one position so far: that one is canonical.
		x.canon[k] = x.ctx(live)
	}
	for e := range x.entries(k) {
		x.markDup(e)
	}
	return -1
}

func (x *ResidentIndex) markDup(p int32) {
	if x.flag[p]&posDup != 0 {
		return
	}
	// posCanon marks a hash's only position; a dup hash keeps its canon
	// entry until it stops being resident.
	x.flag[p] = (x.flag[p] | posDup) &^ posCanon
	if x.valid(p) {
		x.segs[x.pseg[p]].dupc++
		x.dupLive++
	}
}

// keepDead is the dead positions the arena keeps beyond twice the live
// ones: a removed session is revived in place when it is recorded again,
// without a probe per block (about 8 MB of arena and table). A variable so
// tests can make compaction frequent.
var keepDead = 1 << 18

// boundedDead is keepDead for a Bound index (about 160 KB of arena); a
// variable so tests can make its compactions frequent.
var boundedDead = 1 << 12

// reserve makes room for need new positions: when the arena is used up,
// by compacting it if its dead positions exceed deadAllowed (positions
// move: it reports true), else by growing it (dead positions stay
// revivable).
func (x *ResidentIndex) reserve(need int) bool {
	if len(x.keys)+need <= x.limit {
		return false
	}
	if len(x.keys)-x.live > x.deadAllowed(x.live) {
		x.compact(x.compactLimit(x.live, need))
		return true
	}
	x.grow((len(x.keys)+need)*3/2 + 1024)
	return false
}

// deadAllowed is how many dead positions the arena keeps, revivable,
// before a compaction drops them: 2·live + keepDead, or for a Bound
// index live + boundedDead.
func (x *ResidentIndex) deadAllowed(live int) int {
	if x.bounded {
		return min(live+boundedDead, 2*live+keepDead)
	}
	return 2*live + keepDead
}

// compactLimit is the arena limit a compaction leaves for live positions
// and need new ones. It has room for them and for as many dead positions
// as deadAllowed keeps (plus an eighth), so that the arena fills up with
// its dead positions past the allowance and the next reserve compacts it
// again rather than growing it step by step back to that size (which
// allocated a table at every doubling: the 1M-request 1P3D run's index
// allocated 1.4 GB of tables, 35 % of the run's allocation, and spent
// 6 % of its CPU in grow). When the table is kept, the arena fills it.
func (x *ResidentIndex) compactLimit(live, need int) int {
	dead := x.deadAllowed(live)
	want := max(live+need+dead+dead/8+64, 2*(live+need))
	// Fill the table the arena keeps (tableBits) to its load limit.
	return max(want, (1<<x.tableBits(want))*2/3)
}

// tableBits is the table size (log2 slots) for an arena limit: at least
// 1.5·limit slots, and the current table when it is at most twice that
// (the table is kept: a count of live positions that moves up and down
// between compactions does not reallocate it each time it moves up).
func (x *ResidentIndex) tableBits(limit int) uint {
	bits := uint(4)
	for 1<<bits < limit*3/2 {
		bits++
	}
	if x.tbits == bits+1 {
		return x.tbits
	}
	return bits
}

// grow raises the arena's limit, doubling the table as often as needed
// by moving its entries in slot order (each lands near twice its old
// slot, so the writes are nearly sequential) and the filter with them.
func (x *ResidentIndex) grow(limit int) {
	x.limit = limit
	bits := x.tbits
	for 1<<bits < limit*3/2 {
		bits++
	}
	if bits == x.tbits {
		return
	}
	old := x.tab
	x.tab = make([]tabSlot, 1<<bits)
	x.tableAllocs++
	x.filt = make([]uint64, 1<<(bits+2-6))
	x.tbits, x.tmask = bits, uint32(1<<bits-1)
	for _, e := range old {
		if e.pos == 0 {
			continue
		}
		i := x.home(e.fp)
		for x.tab[i].pos != 0 {
			i = (i + 1) & x.tmask
		}
		x.tab[i] = e
		w, b := filterAt(e.fp, bits)
		x.filt[w] |= b
	}
}

// compact moves the live segments down to the arena's start, in position
// order (each lands at or below where it was, so the move is in place), and
// rebuilds the table, the dup flags and the canon entries from them; the
// arena's limit becomes limit positions (at least the live ones). The
// arena is reallocated only when it is too small for limit, or, for a
// Bound index, more than twice as large: no second arena is kept (a spare
// as large as the live one was 8 MB of the 1M-request 1P3D run's peak
// live heap, 114 → 106 MB).
func (x *ResidentIndex) compact(limit int) {
	x.compactions++
	x.forgetGhosts()
	// The live segments in position order (sorting the segments is
	// cheaper than scanning the arena, which is mostly dead), and where
	// each goes.
	order := x.segOrder[:0]
	for id := range x.segs {
		if s := &x.segs[id]; s.lo != s.hi {
			order = append(order, int32(id))
		}
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(x.segs[a].lo, x.segs[b].lo) })
	if len(x.segLo) < len(x.segs) {
		x.segLo = make([]int32, len(x.segs), cap(x.segs))
	}
	newLo := x.segLo[:len(x.segs)]
	w := int32(0)
	for _, id := range order {
		s := &x.segs[id]
		newLo[id] = w
		w += s.hi - s.lo
	}
	// Positions that outlive the move: parents and record tails (both
	// live segments' ends), mapped while pseg and the ranges are the old
	// ones.
	move := func(p int32) int32 {
		id := x.pseg[p]
		return newLo[id] + p - x.segs[id].lo
	}
	for _, id := range order {
		if s := &x.segs[id]; s.parent >= 0 {
			s.parent = move(s.parent)
		}
	}
	for k, r := range x.owned {
		if r.tail > 0 {
			r.tail = move(r.tail-1) + 1
			x.owned[k] = r
		}
	}
	keys, pseg, flag := x.keys, x.pseg, x.flag
	if cap(keys) < limit || x.bounded && cap(keys) > 2*limit {
		// A new arena; the old one is dropped with it. (A Bound index's
		// memory follows what is resident.)
		keys = make([]uint64, limit)
		pseg = make([]int32, limit)
		flag = make([]uint8, limit)
	}
	keys, pseg, flag = keys[:cap(keys)], pseg[:cap(pseg)], flag[:cap(flag)]
	for _, id := range order {
		// Every write is at or below the position it reads (or in
		// another array), and copy is a memmove.
		s := &x.segs[id]
		lo, n := newLo[id], s.hi-s.lo
		copy(keys[lo:lo+n], x.keys[s.lo:s.hi])
		for i := range n {
			pseg[lo+i] = id
			flag[lo+i] = x.flag[s.lo+i]&posOff | posLive
		}
		s.lo, s.hi, s.dupc = lo, lo+n, 0
	}
	x.keys, x.pseg, x.flag = keys[:w], pseg[:w], flag[:w]
	x.segOrder, x.limit = order, limit
	x.dupLive = 0 // rebuild flags the dups again

	x.rebuild()

	// Canonical contexts: only resident hashes keep theirs; one that is
	// now at one position is flagged so, so that reviving it after it
	// stops being resident drops the entry.
	for k := range x.canon {
		p := x.first(k)
		switch {
		case p < 0:
			delete(x.canon, k)
		case x.flag[p]&posDup == 0:
			x.flag[p] |= posCanon
		}
	}
}

// rebuild sizes the table and the filter for the arena's limit and enters
// every position again (live or dead; positions do not move), flagging
// the positions of hashes entered more than once.
func (x *ResidentIndex) rebuild() {
	bits := x.tableBits(x.limit)
	if len(x.tab) == 1<<bits {
		clear(x.tab)
	} else {
		x.tab = make([]tabSlot, 1<<bits)
		x.tableAllocs++
	}
	x.tbits, x.tmask = bits, uint32(1<<bits-1)
	if words := 1 << (bits + 2 - 6); len(x.filt) == words {
		clear(x.filt)
	} else {
		x.filt = make([]uint64, words)
	}
	for p, k := range x.keys {
		fp := tabHash(k)
		i := x.home(fp)
		dup := false
		for ; x.tab[i].pos != 0; i = (i + 1) & x.tmask {
			if e := x.tab[i]; e.fp == fp && x.keys[e.pos-1] == k {
				x.markDup(e.pos - 1)
				dup = true
			}
		}
		x.tab[i] = tabSlot{fp: fp, pos: int32(p) + 1}
		x.filterAdd(k)
		if dup {
			x.markDup(int32(p))
		}
	}
}

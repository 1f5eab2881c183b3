package gpu

// posMap is BlockLRU's hash table: block hash → arena position, open
// addressing with linear probing and Fibonacci hashing (trace hash ids can
// be small consecutive integers). A slot is 8 bytes — the top 32 bits of
// the key's hash and the position + 1 (0: empty) — so a table for a
// worker's cache stays in the CPU caches; a candidate is confirmed by
// comparing the arena's key at its position. Nothing is ever deleted:
// BlockLRU validates what it finds (an entry whose block was evicted is
// stale, and is reused when the block comes back) and rebuilds the table
// from its live blocks when it compacts its arena, so the entries of
// evicted blocks last until then: the table has at most one entry per
// arena position used since the last compaction, and twice as many slots
// as the arena has positions (BlockLRU.compact).
type posMap struct {
	slots []pmSlot
	bits  uint // log2(len(slots)), at most 32
	mask  uint32
	n     int // occupied slots
}

type pmSlot struct {
	fp  uint32 // top 32 bits of key·φ
	pos int32  // position + 1; 0 = empty
}

func pmHash(key uint64) uint32 { return uint32((key * 0x9e3779b97f4a7c15) >> 32) }

// init empties the map with room for at least size slots (a power of two
// ≥ 16), reusing its array when it is exactly that size.
func (m *posMap) init(size int) {
	bits := uint(4)
	for 1<<bits < size {
		bits++
	}
	if len(m.slots) == 1<<bits {
		clear(m.slots)
	} else {
		m.slots = make([]pmSlot, 1<<bits)
	}
	m.bits, m.mask, m.n = bits, uint32(1<<bits-1), 0
}

func (m *posMap) home(fp uint32) uint32 { return fp >> (32 - m.bits) }

// get returns key's position (live or stale), or -1; keys is the arena.
func (m *posMap) get(key uint64, keys []uint64) int32 {
	if m.slots == nil {
		return -1
	}
	fp := pmHash(key)
	for i := m.home(fp); ; i = (i + 1) & m.mask {
		s := m.slots[i]
		if s.pos == 0 {
			return -1
		}
		if s.fp == fp && keys[s.pos-1] == key {
			return s.pos - 1
		}
	}
}

// claim returns key's slot, claiming an empty one for it if key is absent
// (its pos is then 0, and the caller must set it before using the map
// again). It never grows the map: the caller keeps the load at most one
// half (BlockLRU.compact).
func (m *posMap) claim(key uint64, keys []uint64) *pmSlot {
	fp := pmHash(key)
	for i := m.home(fp); ; i = (i + 1) & m.mask {
		s := &m.slots[i]
		if s.pos == 0 {
			s.fp = fp
			m.n++
			return s
		}
		if s.fp == fp && keys[s.pos-1] == key {
			return s
		}
	}
}

// add inserts an entry known to be absent, by its stored hash bits.
func (m *posMap) add(fp uint32, pos int32) {
	for i := m.home(fp); ; i = (i + 1) & m.mask {
		s := &m.slots[i]
		if s.pos == 0 {
			s.fp, s.pos = fp, pos+1
			m.n++
			return
		}
	}
}

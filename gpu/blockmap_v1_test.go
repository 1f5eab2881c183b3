package gpu

// blockMap (the per-block reference blockLRUv1's) is an open-addressing
// hash map from block hash to a node index (> 0): linear probing with Fibonacci hashing
// (trace hash ids can be small consecutive integers) and backward-shift
// deletion, so there are no tombstones and lookups stay short. Profiles of
// replays showed Go's map as the prefix cache's main cost.
type blockMap struct {
	slots []bmSlot
	mask  uint64
	shift uint
	n     int
}

type bmSlot struct {
	key uint64
	val int32 // 0 = empty
}

func (m *blockMap) init(capacity int) {
	size := 16
	for size < capacity*2 {
		size <<= 1
	}
	m.slots = make([]bmSlot, size)
	m.mask = uint64(size - 1)
	m.shift = 64
	for s := size; s > 1; s >>= 1 {
		m.shift--
	}
	m.n = 0
}

func (m *blockMap) home(key uint64) uint64 { return (key * 0x9e3779b97f4a7c15) >> m.shift }

// get returns the value for key, or 0.
func (m *blockMap) get(key uint64) int32 {
	if m.slots == nil {
		return 0
	}
	for i := m.home(key); ; i = (i + 1) & m.mask {
		s := &m.slots[i]
		if s.val == 0 {
			return 0
		}
		if s.key == key {
			return s.val
		}
	}
}

// put sets key to val (> 0).
func (m *blockMap) put(key uint64, val int32) {
	if m.slots == nil || (m.n+1)*2 > len(m.slots) {
		m.grow()
	}
	for i := m.home(key); ; i = (i + 1) & m.mask {
		s := &m.slots[i]
		if s.val == 0 {
			s.key, s.val = key, val
			m.n++
			return
		}
		if s.key == key {
			s.val = val
			return
		}
	}
}

// del removes key if present.
func (m *blockMap) del(key uint64) {
	if m.slots == nil {
		return
	}
	i := m.home(key)
	for {
		s := &m.slots[i]
		if s.val == 0 {
			return
		}
		if s.key == key {
			break
		}
		i = (i + 1) & m.mask
	}
	// Backward-shift: move later entries of the cluster into the hole when
	// their home does not lie cyclically in (hole, j].
	m.n--
	hole := i
	for j := (i + 1) & m.mask; ; j = (j + 1) & m.mask {
		s := m.slots[j]
		if s.val == 0 {
			break
		}
		h := m.home(s.key)
		if (j-h)&m.mask >= (j-hole)&m.mask {
			m.slots[hole] = s
			hole = j
		}
	}
	m.slots[hole] = bmSlot{}
}

func (m *blockMap) grow() {
	old := m.slots
	m.init(max(16, len(old)))
	for _, s := range old {
		if s.val != 0 {
			m.put(s.key, s.val)
		}
	}
}

package policy

import "math/bits"

// ResidentIndex is the router's estimate of which prefix blocks are resident
// on which decode worker: an inverted index block hash → bitset of workers,
// with per-(worker, session) ownership so that evicting a session removes
// exactly the blocks it contributed (blocks shared by several sessions on
// one worker, such as a system prompt, stay until the last owner goes).
type ResidentIndex struct {
	n     int // workers
	words int // bitset words per block
	// blocks maps a block hash to its entry.
	blocks map[uint64]*blockEntry
	// owned maps (worker, session) to the blocks recorded for it.
	owned map[ownerKey][]uint64
}

type ownerKey struct {
	d int32
	s int32
}

type blockEntry struct {
	bits []uint64 // one bit per worker holding the block
	refs []ref    // per-worker owner counts, only for workers in bits
}

type ref struct {
	d int32
	n int32
}

// NewResidentIndex returns an empty index over n workers.
func NewResidentIndex(n int) *ResidentIndex {
	return &ResidentIndex{
		n: n, words: (n + 63) / 64,
		blocks: make(map[uint64]*blockEntry),
		owned:  make(map[ownerKey][]uint64),
	}
}

// Workers is the number of workers the index covers.
func (x *ResidentIndex) Workers() int { return x.n }

// Blocks is the number of distinct blocks resident somewhere.
func (x *ResidentIndex) Blocks() int { return len(x.blocks) }

// Set records blocks as session s's resident blocks on worker d, replacing
// whatever was recorded for (d, s). Blocks kept from the previous record are
// not touched, so a growing prefix costs only its new blocks.
func (x *ResidentIndex) Set(d int, s int32, blocks []uint64) {
	k := ownerKey{int32(d), s}
	old := x.owned[k]
	common := 0
	for common < len(old) && common < len(blocks) && old[common] == blocks[common] {
		common++
	}
	for _, b := range old[common:] {
		x.unref(d, b)
	}
	for _, b := range blocks[common:] {
		x.ref(d, b)
	}
	if len(blocks) == 0 {
		delete(x.owned, k)
		return
	}
	// Keep our own copy: callers may reuse their slices.
	if cap(old) >= len(blocks) {
		old = old[:len(blocks)]
	} else {
		old = append(old[:common:common], make([]uint64, len(blocks)-common)...)
	}
	copy(old[common:], blocks[common:])
	x.owned[k] = old
}

// Remove forgets session s's blocks on worker d.
func (x *ResidentIndex) Remove(d int, s int32) {
	k := ownerKey{int32(d), s}
	for _, b := range x.owned[k] {
		x.unref(d, b)
	}
	delete(x.owned, k)
}

// Has reports whether block b is recorded resident on worker d.
func (x *ResidentIndex) Has(d int, b uint64) bool {
	e := x.blocks[b]
	return e != nil && e.bits[d>>6]&(1<<(uint(d)&63)) != 0
}

func (x *ResidentIndex) ref(d int, b uint64) {
	e := x.blocks[b]
	if e == nil {
		e = &blockEntry{bits: make([]uint64, x.words)}
		x.blocks[b] = e
	}
	w, m := d>>6, uint64(1)<<(uint(d)&63)
	if e.bits[w]&m == 0 {
		e.bits[w] |= m
		e.refs = append(e.refs, ref{int32(d), 1})
		return
	}
	for i := range e.refs {
		if e.refs[i].d == int32(d) {
			e.refs[i].n++
			return
		}
	}
}

func (x *ResidentIndex) unref(d int, b uint64) {
	e := x.blocks[b]
	if e == nil {
		return
	}
	for i := range e.refs {
		if e.refs[i].d != int32(d) {
			continue
		}
		e.refs[i].n--
		if e.refs[i].n > 0 {
			return
		}
		e.refs[i] = e.refs[len(e.refs)-1]
		e.refs = e.refs[:len(e.refs)-1]
		e.bits[d>>6] &^= 1 << (uint(d) & 63)
		if len(e.refs) == 0 {
			delete(x.blocks, b)
		}
		return
	}
}

// Overlap adds, for every worker d, |blocks ∩ resident[d]| to out[d]
// (len(out) must be Workers()). Duplicate hashes in blocks count once each
// time they appear, like the reference definition over a list.
func (x *ResidentIndex) Overlap(blocks []uint64, out []int) {
	for _, b := range blocks {
		e := x.blocks[b]
		if e == nil {
			continue
		}
		for w, word := range e.bits {
			for word != 0 {
				t := bits.TrailingZeros64(word)
				out[w<<6+t]++
				word &= word - 1
			}
		}
	}
}

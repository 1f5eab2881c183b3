package policy

import (
	"unsafe"

	"github.com/pdemu/pdemu/internal/hashrun"
)

// records are an index's per-(worker, session) owner lists: what Set was
// last given for each, kept for the next Set's diff and the Owned hints.
// The lists of removed records are reused: at most maxSpare are kept, the
// larger ones first. ResidentIndex and the per-block reference index of
// the tests keep their lists the same way, through this one type.
type records struct {
	owned map[ownerKey]record // (worker, session) → its recorded blocks
	spare [][]uint64          // owner lists of removed records, for reuse
}

const maxSpare = 32

type ownerKey struct {
	d int32
	s int32
}

// record is one (worker, session) owner list. With src == nil, blocks is
// the index's own copy (Set). Otherwise blocks is the caller's slice itself
// and src its first element's address (SetImmutable: the caller promised
// that its elements never change), so the index never writes or recycles
// it, and any slice starting at src agrees with blocks on their common
// length without comparing them. tail is the arena position of the list's
// last node + 1 (0: empty list; always 0 in the per-block reference).
type record struct {
	blocks []uint64
	src    *uint64
	tail   int32
}

// sharedPrefix is the length of the longest common prefix of blocks and
// r.blocks.
func (r record) sharedPrefix(blocks []uint64) int {
	if r.src != nil && len(blocks) > 0 && unsafe.SliceData(blocks) == r.src {
		return min(len(blocks), len(r.blocks))
	}
	return hashrun.Prefix(blocks, r.blocks)
}

// Owned returns the blocks recorded for session s on worker d (nil if none).
// The slice belongs to the index: read it, do not keep or modify it.
func (r *records) Owned(d int, s int32) []uint64 { return r.owned[ownerKey{int32(d), s}].blocks }

// OwnedPrefix is the length of the longest common prefix of blocks and
// Owned(d, s), compared in O(1) when the record was set by SetImmutable
// from a slice with the same first element as blocks.
func (r *records) OwnedPrefix(d int, s int32, blocks []uint64) int {
	return r.owned[ownerKey{int32(d), s}].sharedPrefix(blocks)
}

// put makes blocks k's record in place of rec, with which it shares its
// first common blocks; src is blocks' first element for SetImmutable (the
// record keeps the caller's slice), nil for Set (the record keeps a copy,
// in rec's list when it is large enough).
func (r *records) put(k ownerKey, rec record, blocks []uint64, src *uint64, common int, tail int32) {
	old := rec.blocks
	if rec.src != nil {
		// A borrowed list: never written or recycled, and none of it is
		// ours to keep.
		old, common = nil, 0
	}
	if len(blocks) == 0 {
		r.recycle(old)
		delete(r.owned, k)
		return
	}
	if src != nil {
		r.recycle(old)
		r.owned[k] = record{blocks: blocks, src: src, tail: tail}
		return
	}
	switch {
	case cap(old) >= len(blocks):
		old = old[:len(blocks)]
	case old == nil:
		old = r.buffer(len(blocks))
	default:
		old = append(old[:common:common], make([]uint64, len(blocks)-common)...)
	}
	copy(old[common:], blocks[common:])
	r.owned[k] = record{blocks: old, tail: tail}
}

// drop forgets k's record rec, keeping its list for reuse if it is the
// index's own.
func (r *records) drop(k ownerKey, rec record) {
	if rec.src == nil {
		r.recycle(rec.blocks)
	}
	delete(r.owned, k)
}

// buffer returns a list of length n, reusing a removed record's if one is
// large enough.
func (r *records) buffer(n int) []uint64 {
	for i, b := range r.spare {
		if cap(b) >= n {
			last := len(r.spare) - 1
			r.spare[i] = r.spare[last]
			r.spare[last] = nil
			r.spare = r.spare[:last]
			return b[:n]
		}
	}
	return make([]uint64, n, n+n/4)
}

func (r *records) recycle(b []uint64) {
	if cap(b) == 0 {
		return
	}
	if len(r.spare) < maxSpare {
		r.spare = append(r.spare, b[:0])
		return
	}
	// Keep the larger buffers.
	for i, o := range r.spare {
		if cap(o) < cap(b) {
			r.spare[i] = b[:0]
			return
		}
	}
}

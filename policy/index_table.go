package policy

import (
	"encoding/binary"
	"math/bits"
)

// Chained reports whether every recorded block sits at one position after
// one predecessor in every owner list that holds it (the condition for
// Route's chain shortcut).
func (x *ResidentIndex) Chained() bool { return x.bad == 0 }

func (x *ResidentIndex) home(k uint64) (int, uint8) {
	h := k * golden
	return int(h >> x.shift), uint8(h>>(x.shift-8)) | 1
}

// Tag groups: lookups load 8 tags at once and find the first empty slot
// and the candidate matches with SWAR arithmetic (no per-slot branch).
// tags has 8 trailing bytes mirroring tags[0:8], so a group that runs off
// the end reads the wrapped-around tags.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// zeroBytes marks (with 0x80) the zero bytes of w; the lowest mark is
// exact, higher ones may be false positives.
func zeroBytes(w uint64) uint64 { return (w - lsb) &^ w & msb }

// find returns the slot of block k, or -1.
func (x *ResidentIndex) find(k uint64) int {
	h := k * golden
	if x.filter[h>>x.fshift] == 0 {
		return -1
	}
	return x.lookup(k, h)
}

// lookup is find without the filter (for blocks expected to be present);
// h is k * golden.
func (x *ResidentIndex) lookup(k, h uint64) int {
	i, t := int(h>>x.shift), uint64(uint8(h>>(x.shift-8))|1)
	for {
		g := binary.LittleEndian.Uint64(x.tags[i:])
		z := zeroBytes(g)
		m := zeroBytes(g ^ (t * lsb))
		if z != 0 {
			m &= (z & -z) - 1 // matches before the first empty slot
		}
		for ; m != 0; m &= m - 1 {
			j := (i + bits.TrailingZeros64(m)>>3) & x.mask
			if x.slots[j].key == k {
				return j
			}
		}
		if z != 0 {
			return -1
		}
		i = (i + 8) & x.mask
	}
}

func (x *ResidentIndex) filterAdd(k uint64) {
	f := &x.filter[(k*golden)>>x.fshift]
	if *f < 255 {
		*f++
	}
}

func (x *ResidentIndex) filterDel(k uint64) {
	f := &x.filter[(k*golden)>>x.fshift]
	if *f < 255 {
		*f--
	}
}

func (x *ResidentIndex) setTag(i int, t uint8) {
	x.tags[i] = t
	if i < 8 {
		x.tags[len(x.slots)+i] = t
	}
}

// insert places k (absent) in an empty slot and returns it.
func (x *ResidentIndex) insert(k uint64) int {
	if (x.used+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	i, t := x.home(k)
	for x.tags[i] != 0 {
		i = (i + 1) & x.mask
	}
	x.setTag(i, t)
	x.slots[i] = slot{key: k}
	x.used++
	x.filterAdd(k)
	return i
}

func (x *ResidentIndex) grow() {
	oldTags, oldSlots := x.tags, x.slots
	x.alloc(x.shift - 1)
	for j, tg := range oldTags[:len(oldSlots)] {
		if tg == 0 {
			continue
		}
		i, t := x.home(oldSlots[j].key)
		for x.tags[i] != 0 {
			i = (i + 1) & x.mask
		}
		x.setTag(i, t)
		x.slots[i] = oldSlots[j]
		x.used++
		x.filterAdd(oldSlots[j].key)
	}
}

// del empties slot i with backward-shift deletion (no tombstones).
func (x *ResidentIndex) del(i int) {
	x.filterDel(x.slots[i].key)
	mask := x.mask
	j := i
	for {
		j = (j + 1) & mask
		if x.tags[j] == 0 {
			break
		}
		h := int((x.slots[j].key * golden) >> x.shift)
		// The entry at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		var stay bool
		if i <= j {
			stay = i < h && h <= j
		} else {
			stay = i < h || h <= j
		}
		if !stay {
			x.setTag(i, x.tags[j])
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.setTag(i, 0)
	x.slots[i] = slot{}
	x.used--
}

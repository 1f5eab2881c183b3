// Package varint decodes encoding/binary's varints, with the same results
// for every input, faster for those of up to 8 bytes with 8 bytes to read:
// one load and a few shifts instead of a loop per byte (the summary's
// quantiles and the output writers read every stored duration and link
// sample back through it: a run's value streams are mostly 4- to 7-byte
// varints, where encoding/binary's loop cost ~70 instructions a value).
package varint

import (
	"encoding/binary"
	"math/bits"
)

// Uvarint is binary.Uvarint.
func Uvarint(b []byte) (uint64, int) {
	if len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if stop := ^x & 0x8080808080808080; stop != 0 {
			n := bits.TrailingZeros64(stop)/8 + 1 // the bytes of the varint
			x &= 0x7f7f7f7f7f7f7f7f >> (64 - 8*n)
			// Pack the 7-bit groups: pairs into 14 bits, then 28, then 56.
			x = x&0x007f007f007f007f | x&0x7f007f007f007f00>>1
			x = x&0x00003fff00003fff | x&0x3fff00003fff0000>>2
			x = x&0x000000000fffffff | x&0x0fffffff00000000>>4
			return x, n
		}
	}
	return binary.Uvarint(b)
}

// Varint is binary.Varint.
func Varint(b []byte) (int64, int) {
	ux, n := Uvarint(b)
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x, n
}

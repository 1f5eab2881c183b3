// Package hashrun compares runs of block hashes: the length of the longest
// common prefix (Prefix) or suffix (Suffix) of two []uint64. It is the
// inner loop of the caches that match a prompt's hashes against the ones
// they hold: the workers' block LRU (gpu.BlockLRU) and the router's
// resident index (policy.ResidentIndex), which kept a copy each.
//
// Contract: the results are the element-by-element definitions' (the
// tests check them against it); the inputs are only read. Chunks of 32
// hashes (256 bytes) are compared with bytes.Equal (vectorised), the chunk
// that differs 4 hashes at a time with one OR of XORs, the last few one
// by one.
package hashrun

import (
	"bytes"
	"unsafe"
)

const chunk = 32

// Prefix is the length of the longest common prefix of a and b.
func Prefix(a, b []uint64) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	i := 0
	for i+chunk <= n && bytes.Equal(asBytes(a[i:i+chunk]), asBytes(b[i:i+chunk])) {
		i += chunk
	}
	for i+4 <= n {
		x, y := a[i:i+4], b[i:i+4]
		if (x[0]^y[0])|(x[1]^y[1])|(x[2]^y[2])|(x[3]^y[3]) != 0 {
			break
		}
		i += 4
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// Suffix is the length of the longest common suffix of a and b.
func Suffix(a, b []uint64) int {
	n := min(len(a), len(b))
	a, b = a[len(a)-n:], b[len(b)-n:]
	i := n // a[i:] == b[i:]
	for i >= chunk && bytes.Equal(asBytes(a[i-chunk:i]), asBytes(b[i-chunk:i])) {
		i -= chunk
	}
	a, b = a[:i], b[:i]
	for i >= 4 && (a[i-1]^b[i-1])|(a[i-2]^b[i-2])|(a[i-3]^b[i-3])|(a[i-4]^b[i-4]) == 0 {
		i -= 4
	}
	for i > 0 && a[i-1] == b[i-1] {
		i--
	}
	return n - i
}

// asBytes is s's memory as bytes (no copy).
func asBytes(s []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*8)
}

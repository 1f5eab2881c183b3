// Package splitmix is pdemu's one 64-bit mixing function: SplitMix64's
// finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014), a bijection of uint64 whose output bits each
// depend on every input bit. The synthetic block hashes (workload), the
// rendezvous keys of bucket routing (policy/bucket) and the block hashes a
// router recomputes from a served prompt (serve, docs/SERVE.md) all use it,
// so it must never change: outputs and documented hashes depend on it.
package splitmix

// Mix64 is SplitMix64's finaliser.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

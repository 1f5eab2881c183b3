package bucket

import "github.com/pdemu/pdemu/workload"

const golden = 0x9E3779B97F4A7C15

// mix64 is SplitMix64's finaliser: a bijection of uint64 whose output bits
// each depend on every input bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return x
}

// affinityKey is the rendezvous key of a request: a hash of its first k
// blocks (of all of them when it has fewer), or of its session when it has
// none. It does not rely on the blocks being prefix-chained.
func affinityKey(r *workload.Request, k int) uint64 {
	if len(r.Blocks) == 0 {
		return mix64(uint64(uint32(r.Session)) ^ golden)
	}
	h := uint64(golden)
	for _, b := range r.Blocks[:min(k, len(r.Blocks))] {
		h = mix64(h ^ b)
	}
	return h
}

// hrwWeight is instance i's rendezvous (highest random weight) weight for
// key: the instance with the highest weight is the key's home.
func hrwWeight(key uint64, i int) uint64 {
	return mix64(key ^ mix64(uint64(i+1)*golden))
}

// unit maps a weight to [0, 1) for logging.
func unit(w uint64) float64 { return float64(w>>11) / (1 << 53) }

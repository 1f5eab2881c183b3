package bucket

import (
	"github.com/pdemu/pdemu/internal/splitmix"
	"github.com/pdemu/pdemu/workload"
)

const golden = 0x9E3779B97F4A7C15

// affinityKey is the rendezvous key of a request: a hash of its first k
// blocks (of all of them when it has fewer), or of its session when it has
// none. It does not rely on the blocks being prefix-chained.
func affinityKey(r *workload.Request, k int) uint64 {
	if len(r.Blocks) == 0 {
		return splitmix.Mix64(uint64(uint32(r.Session)) ^ golden)
	}
	h := uint64(golden)
	for _, b := range r.Blocks[:min(k, len(r.Blocks))] {
		h = splitmix.Mix64(h ^ b)
	}
	return h
}

// hrwWeight is instance i's rendezvous (highest random weight) weight for
// key: the instance with the highest weight is the key's home.
func hrwWeight(key uint64, i int) uint64 {
	return splitmix.Mix64(key ^ splitmix.Mix64(uint64(i+1)*golden))
}

// unit maps a weight to [0, 1) for logging.
func unit(w uint64) float64 { return float64(w>>11) / (1 << 53) }

package cluster

import "sort"

// rateCaps maps a decode index to the line rate of a NIC's link to it
// (0: no link from this NIC). It is sized by the NIC's links, not by the
// cluster: a 256P768D full mesh has 196,608 NICs of one link each, and a
// dense per-decode vector per NIC would be 1.2 GB.
type rateCaps struct {
	d    []int32 // ascending decode indices
	rate []float64
}

// set records the rate of the link to decode d (a later set for the same
// d replaces it).
func (r *rateCaps) set(d int, rate float64) {
	i := sort.Search(len(r.d), func(i int) bool { return r.d[i] >= int32(d) })
	if i < len(r.d) && r.d[i] == int32(d) {
		r.rate[i] = rate
		return
	}
	r.d = append(r.d, 0)
	r.rate = append(r.rate, 0)
	copy(r.d[i+1:], r.d[i:])
	copy(r.rate[i+1:], r.rate[i:])
	r.d[i], r.rate[i] = int32(d), rate
}

// at is the rate of the link to decode d, 0 when there is none.
func (r rateCaps) at(d int) float64 {
	if len(r.d) == 1 { // the common case: a NIC per link
		if r.d[0] == int32(d) {
			return r.rate[0]
		}
		return 0
	}
	i := sort.Search(len(r.d), func(i int) bool { return r.d[i] >= int32(d) })
	if i < len(r.d) && r.d[i] == int32(d) {
		return r.rate[i]
	}
	return 0
}

// each calls f for every linked decode index with a rate > 0, ascending.
func (r rateCaps) each(f func(d int, rate float64)) {
	for i, d := range r.d {
		if r.rate[i] > 0 {
			f(int(d), r.rate[i])
		}
	}
}

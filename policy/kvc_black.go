package policy

import "math/bits"

// A session's blacklist (lines 1–2: rejects[s,d] ≥ τ_reject) is kept as a
// bitset beside its rejects, so that Route finds its candidates (neither
// blacklisted nor tried) a 64-bit word at a time instead of testing every
// decode worker's rejects and tried bit: at 64 workers a request tries
// ~12 workers, each try a route over all 48 decode workers, and those two
// loops were most of KVC.route's instructions (callgrind, 16p48d). The
// order of the candidates is the workers' index order either way, so
// Route's choice is the same (TestRouteMatchesReference).

// setRejects sets rejects[s,d] of session state st to v and its
// blacklist bit to v ≥ τ_reject. Every write of a reject count goes
// through it.
func (k *KVC) setRejects(st *sessState, d int, v int32) {
	st.rejects[d] = v
	w, b := d>>6, uint64(1)<<(uint(d)&63)
	if v >= int32(k.cfg.TauReject) {
		st.black[w] |= b
	} else {
		st.black[w] &^= b
	}
}

// words is the number of 64-bit words of a bitset over the decode
// workers.
func (k *KVC) words() int { return (k.cfg.Decode + 63) >> 6 }

// untried is word w of the set of decode workers not in tried.
func (k *KVC) untried(tried []uint64, w int) uint64 {
	m := ^uint64(0)
	if w < len(tried) {
		m = ^tried[w]
	}
	if r := k.cfg.Decode - w<<6; r < 64 {
		m &= 1<<uint(r) - 1
	}
	return m
}

// candidates is word w of the set of decode workers neither blacklisted
// (black) nor tried.
func (k *KVC) candidates(black, tried []uint64, w int) uint64 {
	return k.untried(tried, w) &^ black[w]
}

// firstMember is the least worker of the non-empty word m of word index w.
func firstMember(w int, m uint64) int { return w<<6 | bits.TrailingZeros64(m) }

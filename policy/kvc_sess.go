package policy

import "github.com/pdemu/pdemu/internal/freelist"

// The KVC-Router's per-session state (§2.3 of the spec: pin[s] and
// rejects[s,d], with the counters the outputs report) and how it is
// allocated and reused.

// SessionStats are per-session counters reported in the outputs.
type SessionStats struct {
	Migrations int // pin moved from one decode worker to another
	Blacklists int // times rejects[s,d] reached τ_reject (counted when it gets there)
	Fallbacks  int // requests that fell back to vanilla P/D
	Rejections int // admission rejections
	Degenerate int // Route calls that took the degenerate branch (every untried worker blacklisted)
}

type sessState struct {
	pin     int32 // -1 = ⊥
	rejects []int32
	black   []uint64 // rejects[d] ≥ τ_reject, a bit per d (kvc_black.go)
	stats   SessionStats
	// resident lists the workers the index holds a record of this session
	// on (kept only with OwnOverlap).
	resident []int32
}

// sessChunk is how many session states one allocation holds.
const sessChunk = 64

// Pin returns the decode worker session s is pinned to, or -1.
func (k *KVC) Pin(s int32) int {
	if st := k.sess[s]; st != nil {
		return int(st.pin)
	}
	return -1
}

// Rejects returns rejects[s, d].
func (k *KVC) Rejects(s int32, d int) int {
	if st := k.sess[s]; st != nil {
		return int(st.rejects[d])
	}
	return 0
}

// Stats returns the per-session counters (a copy).
func (k *KVC) Stats(s int32) SessionStats {
	if st := k.sess[s]; st != nil {
		return st.stats
	}
	return SessionStats{}
}

// Sessions calls f for every session the router has seen.
func (k *KVC) Sessions(f func(s int32, st SessionStats)) {
	for s, st := range k.sess {
		f(s, st.stats)
	}
}

// Forget drops session s's state (its pin, rejects and counters, which
// it returns): the router forgot an idle session (a server's sessions
// never end). A later request of s starts as a new session's.
func (k *KVC) Forget(s int32) (SessionStats, bool) {
	st := k.sess[s]
	if st == nil {
		return SessionStats{}, false
	}
	delete(k.sess, s)
	k.ver++ // the pin and resident set are gone
	stats := st.stats
	k.sessFree = append(k.sessFree, st)
	return stats, true
}

func (k *KVC) state(s int32) *sessState {
	st := k.sess[s]
	if st == nil {
		st = k.newSess()
		k.sess[s] = st
	}
	return st
}

// newSess returns the state of a session never seen (or forgotten): no
// pin, no rejects, no counters. A forgotten session's state is reused, so
// a server's memory follows its live sessions; otherwise states come from
// a chunk, so a run with many sessions does not allocate three times for
// each.
func (k *KVC) newSess() *sessState {
	if st, ok := freelist.Pop(&k.sessFree); ok {
		clear(st.rejects)
		clear(st.black)
		*st = sessState{pin: -1, rejects: st.rejects, black: st.black, resident: st.resident[:0]}
		return st
	}
	if len(k.sessNew) == 0 {
		nd, nw := k.cfg.Decode, k.words()
		k.sessNew = make([]sessState, sessChunk)
		rejects := make([]int32, sessChunk*nd)
		black := make([]uint64, sessChunk*nw)
		for i := range k.sessNew {
			k.sessNew[i].rejects = rejects[i*nd : (i+1)*nd : (i+1)*nd]
			k.sessNew[i].black = black[i*nw : (i+1)*nw : (i+1)*nw]
		}
	}
	st := &k.sessNew[0]
	k.sessNew = k.sessNew[1:]
	st.pin = -1
	return st
}

// Blacklisted reports whether d is blacklisted for session s
// (rejects[s,d] ≥ τ_reject).
func (k *KVC) Blacklisted(s int32, d int) bool {
	st := k.sess[s]
	return st != nil && d >= 0 && d < len(st.rejects) && int(st.rejects[d]) >= k.cfg.TauReject
}

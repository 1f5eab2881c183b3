package gpu

import (
	"slices"
	"time"
)

// EvictCause says why a decode worker dropped a session's KV (an
// EvEvicted event's Cause; evictions.csv's cause column).
type EvictCause uint8

// Eviction causes.
const (
	// EvictCapacity: LRU eviction of an idle session to make room for
	// request Event.For (its admission, or an unadmitted request's KV).
	EvictCapacity EvictCause = iota + 1
	// EvictTransferFailed: a Seed/Reseed whose KV transfer failed released
	// the reservation it was the session's only holder of.
	EvictTransferFailed
	// EvictSessionEnd: the session's final turn ended and the client
	// closed it.
	EvictSessionEnd
	// EvictCrash: the worker crashed and lost every residency (reported by
	// the cluster's fault layer, not by the worker).
	EvictCrash
	// EvictPrefixCache: a fused worker's LRU prefix cache dropped blocks
	// (EvBlocksEvicted; blocks may be shared by sessions, so no session).
	EvictPrefixCache
)

var evictNames = [...]string{"", "capacity", "transfer-failed", "session-end", "worker-crashed", "prefix-cache"}

func (c EvictCause) String() string {
	if int(c) < len(evictNames) && c > 0 {
		return evictNames[c]
	}
	return "EvictCause(?)"
}

// evicted appends the EvEvicted event of session s (resident as res),
// which the caller drops next.
func (w *DecodeWorker) evicted(now time.Duration, res *residency, cause EvictCause, forReq int64) {
	w.out = append(w.out, Event{Kind: EvEvicted, Session: res.id, At: now,
		Tokens: res.tokens, Cause: cause, For: forReq, Name: res.name})
}

// Resident is one session's residency (Residents).
type Resident struct {
	Session int32
	Name    string
	Tokens  int
}

// Residents lists the sessions the worker holds KV for, in session index
// order (what a crash destroys).
func (w *DecodeWorker) Residents() []Resident {
	out := make([]Resident, 0, len(w.sess))
	for id, s := range w.sess {
		out = append(out, Resident{Session: id, Name: s.name, Tokens: s.tokens})
	}
	slices.SortFunc(out, func(a, b Resident) int { return int(a.Session - b.Session) })
	return out
}

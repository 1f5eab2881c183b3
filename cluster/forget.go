package cluster

import (
	"time"

	"github.com/pdemu/pdemu/policy"
)

// Forgetting idle sessions (pdemu serve). A trace's sessions end; a
// server's never say so, so a router that kept every session's state
// would grow with every session it ever saw. With ForgetSessions the P/D
// router forgets a session idle for longer than a TTL of emulated time,
// or the least recently used one beyond a count: its policy state (the
// KVC-Router's pin, rejects and counters: policy.KVC.Forget), its KV-cause
// record, the prefill workers' prompt snapshot of it (as its last turn
// would) and its sessions.csv counts (the collector's Tally) are dropped,
// as if the session had ended; a later request of the same session index
// is routed as a new session's, its prefix still found by the resident
// index. Nothing is silent: the forgotten sessions' counters are summed
// (ForgottenSessions) and summary.json's router.sessions_forgotten counts
// them. The decode workers' KV is not touched: as in vLLM, an idle
// session's KV stays until the worker needs the room (LRU).

// SessionForgotten tells the collector that the router forgot session S.
type SessionForgotten struct{ S int32 }

// forgetter is implemented by policies that can drop a session's state.
type forgetter interface {
	Forget(s int32) (policy.SessionStats, bool)
}

// sessionLRU orders sessions by last use (emulated time), most recent
// first: a doubly linked list threaded through a map.
type sessionLRU struct {
	ttl        time.Duration
	max        int
	m          map[int32]*lruEntry
	head, tail *lruEntry // head: most recent
	free       *lruEntry
	peak       int // the most entries m held since it was built
}

// A Go map keeps the buckets of its largest size and the free list the
// entries of it: after a burst of sessions has expired, expire rebuilds
// both at the size held (shrink), so the memory follows the sessions
// known, not the most ever known. O(n) once per shrink by shrinkFactor,
// so O(1) per forgotten session, amortised.
const (
	shrinkFactor = 4
	shrinkMin    = 1024 // no rebuild of a map that never held more
)

type lruEntry struct {
	s          int32
	last       time.Duration
	prev, next *lruEntry
}

func newSessionLRU(ttl time.Duration, max int) *sessionLRU {
	return &sessionLRU{ttl: ttl, max: max, m: map[int32]*lruEntry{}}
}

func (l *sessionLRU) unlink(e *lruEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// touch marks s used at now.
func (l *sessionLRU) touch(s int32, now time.Duration) {
	e := l.m[s]
	if e != nil {
		l.unlink(e)
	} else {
		if e = l.free; e != nil {
			l.free = e.next
			*e = lruEntry{}
		} else {
			e = &lruEntry{}
		}
		e.s = s
		l.m[s] = e
		l.peak = max(l.peak, len(l.m))
	}
	e.last = now
	e.next = l.head
	if l.head != nil {
		l.head.prev = e
	}
	l.head = e
	if l.tail == nil {
		l.tail = e
	}
}

// expire calls f, oldest first, for every session idle for more than the
// TTL at now (ttl > 0) or beyond the count (max > 0), and forgets it.
func (l *sessionLRU) expire(now time.Duration, f func(s int32)) {
	defer l.shrink()
	for e := l.tail; e != nil; e = l.tail {
		if !(l.max > 0 && len(l.m) > l.max) && !(l.ttl > 0 && now-e.last > l.ttl) {
			return
		}
		l.unlink(e)
		delete(l.m, e.s)
		e.next, l.free = l.free, e
		f(e.s)
	}
}

// shrink rebuilds the map and drops the free list when the map holds
// less than 1/shrinkFactor of its peak (see shrinkFactor).
func (l *sessionLRU) shrink() {
	if l.peak < shrinkMin || len(l.m)*shrinkFactor > l.peak {
		return
	}
	m := make(map[int32]*lruEntry, len(l.m))
	for s, e := range l.m {
		m[s] = e
	}
	l.m, l.free, l.peak = m, nil, len(m)
}

// forgotSessions sums what the router forgot.
type forgotSessions struct {
	n             int
	stats         policy.SessionStats // summed
	maxMigrations int
}

// forgetIdle forgets the sessions expired at now (see sessionLRU).
func (n *routerNode) forgetIdle(now time.Duration, s int32) {
	n.forget.touch(s, now)
	n.forget.expire(now, func(s int32) {
		n.forgot.n++
		if f, ok := n.pol.(forgetter); ok {
			if st, ok := f.Forget(s); ok {
				n.forgot.stats.Migrations += st.Migrations
				n.forgot.stats.Blacklists += st.Blacklists
				n.forgot.stats.Fallbacks += st.Fallbacks
				n.forgot.stats.Rejections += st.Rejections
				n.forgot.stats.Degenerate += st.Degenerate
				n.forgot.maxMigrations = max(n.forgot.maxMigrations, st.Migrations)
			}
		}
		n.kv.forget(s)
		n.send(n.collector, SessionForgotten{s}, 0)
		for _, p := range n.prefill { // their prompt snapshots, as a last turn does
			n.send(p, SessionForgotten{s}, 0)
		}
	})
}

// ForgetSessions makes the P/D router forget sessions idle for more than
// ttl of emulated time or beyond the max most recently used (0: no such
// bound); see above. Call it before the run starts. Fused and bucketed
// deployments (no P/D router) keep every session.
func (c *Cluster) ForgetSessions(ttl time.Duration, max int) {
	if c.router == nil || (ttl <= 0 && max <= 0) {
		return
	}
	c.router.forget = newSessionLRU(ttl, max)
	c.router.kv.sparse = map[int32]*kvTrack{}
	if ix, ok := c.router.pol.(interface{ Index() *policy.ResidentIndex }); ok {
		// A server's resident index keeps memory for what is resident,
		// not for every session it ever removed (see ResidentIndex.Bound).
		ix.Index().Bound()
	}
}

// ForgottenSessions is how many sessions the router forgot, the sum of
// their policy counters and the largest of their migrations.
func (c *Cluster) ForgottenSessions() (n int, sum policy.SessionStats, maxMigrations int) {
	if c.router == nil {
		return 0, policy.SessionStats{}, 0
	}
	f := c.router.forgot
	return f.n, f.stats, f.maxMigrations
}

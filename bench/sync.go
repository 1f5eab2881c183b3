package bench

import (
	"sync"

	"github.com/pdemu/pdemu/policy"
)

// SyncKVC is a concurrency-safe front for policy.KVC, for a router that
// takes requests from many goroutines. The emulator's router node is
// single-threaded and uses KVC directly; SyncKVC lives here, next to
// BenchmarkRouteParallel, its only user.
//
// Design: a reader-writer lock sharded by reader (shardlock.go: readers
// on different cores touch different cache lines). Route, and Begin
// whenever it only needs to route (the session is known, ε is not
// exhausted and the degenerate branch is not taken), run under a read
// lock with a pooled scratch vector that carries its reader's shard:
// Algorithm 1 only reads the router state, so routing scales with cores. Everything that changes state (Fallback, Admitted, Rejected,
// Finished, Evicted, a session's first request) takes the write lock.
// Every call is atomic with respect to the others, so a sequence of calls
// behaves as the same calls on KVC in some serial order (KVC.RouteStats
// aside: the read path does not count).
type SyncKVC struct {
	mu      *shardedRW
	k       *policy.KVC
	epsilon int
	scratch sync.Pool // *scratch
}

// scratch is a reader's: the overlap vector (len Decode) and its shard of
// the lock. sync.Pool keeps objects per P, so a core mostly gets its own
// back, with its own shard.
type scratch struct {
	ov    []int
	shard uint32
}

// NewSyncKVC returns a concurrency-safe KVC-Router.
func NewSyncKVC(cfg policy.KVCConfig) (*SyncKVC, error) {
	k, err := policy.NewKVC(cfg)
	if err != nil {
		return nil, err
	}
	s := &SyncKVC{mu: newShardedRW(), k: k, epsilon: cfg.Epsilon}
	s.scratch.New = func() any {
		return &scratch{ov: make([]int, cfg.Decode), shard: s.mu.ticket()}
	}
	return s, nil
}

// Route is KVC.Route under the read lock.
func (s *SyncKVC) Route(ds *policy.Dispatch) int {
	sc := s.scratch.Get().(*scratch)
	s.mu.rlock(sc.shard)
	d, _ := s.k.RouteShared(ds, sc.ov)
	s.mu.runlock(sc.shard)
	s.scratch.Put(sc)
	return d
}

// Begin is KVC.Begin.
func (s *SyncKVC) Begin(ds *policy.Dispatch) policy.Step {
	if ds.Tries < s.epsilon {
		sc := s.scratch.Get().(*scratch)
		s.mu.rlock(sc.shard)
		d, fast := s.k.RouteShared(ds, sc.ov)
		s.mu.runlock(sc.shard)
		s.scratch.Put(sc)
		if fast {
			return policy.Step{Action: policy.ActAdmit, D: d}
		}
	}
	s.mu.lock()
	defer s.mu.unlock()
	return s.k.Begin(ds)
}

// Admitted is KVC.Admitted.
func (s *SyncKVC) Admitted(ds *policy.Dispatch, d int, mode policy.Mode) policy.Step {
	s.mu.lock()
	defer s.mu.unlock()
	return s.k.Admitted(ds, d, mode)
}

// Rejected is KVC.Rejected.
func (s *SyncKVC) Rejected(ds *policy.Dispatch, d int, reason string) policy.Step {
	s.mu.lock()
	defer s.mu.unlock()
	return s.k.Rejected(ds, d, reason)
}

// Finished is KVC.Finished.
func (s *SyncKVC) Finished(d int) {
	s.mu.lock()
	s.k.Finished(d)
	s.mu.unlock()
}

// Evicted is KVC.Evicted.
func (s *SyncKVC) Evicted(d int, sess int32) {
	s.mu.lock()
	s.k.Evicted(d, sess)
	s.mu.unlock()
}

// Pin is KVC.Pin.
func (s *SyncKVC) Pin(sess int32) int {
	sc := s.scratch.Get().(*scratch)
	s.mu.rlock(sc.shard)
	defer func() { s.mu.runlock(sc.shard); s.scratch.Put(sc) }()
	return s.k.Pin(sess)
}

// Inflight is KVC.Inflight.
func (s *SyncKVC) Inflight(d int) int {
	sc := s.scratch.Get().(*scratch)
	s.mu.rlock(sc.shard)
	defer func() { s.mu.runlock(sc.shard); s.scratch.Put(sc) }()
	return s.k.Inflight(d)
}

// Rejects is KVC.Rejects.
func (s *SyncKVC) Rejects(sess int32, d int) int {
	sc := s.scratch.Get().(*scratch)
	s.mu.rlock(sc.shard)
	defer func() { s.mu.runlock(sc.shard); s.scratch.Put(sc) }()
	return s.k.Rejects(sess, d)
}

// Stats is KVC.Stats.
func (s *SyncKVC) Stats(sess int32) policy.SessionStats {
	sc := s.scratch.Get().(*scratch)
	s.mu.rlock(sc.shard)
	defer func() { s.mu.runlock(sc.shard); s.scratch.Put(sc) }()
	return s.k.Stats(sess)
}

// Sessions is KVC.Sessions (f runs under the read lock: it must not call
// back into s's write methods).
func (s *SyncKVC) Sessions(f func(sess int32, st policy.SessionStats)) {
	sc := s.scratch.Get().(*scratch)
	s.mu.rlock(sc.shard)
	defer func() { s.mu.runlock(sc.shard); s.scratch.Put(sc) }()
	s.k.Sessions(f)
}

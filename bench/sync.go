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
// Design: one sync.RWMutex. Route, and Begin whenever it only needs to
// route (the session is known, ε is not exhausted and the degenerate
// branch is not taken), run under the read lock with a pooled scratch
// vector: Algorithm 1 only reads the router state, so routing scales with
// cores. Everything that changes state (Fallback, Admitted, Rejected,
// Finished, Evicted, a session's first request) takes the write lock.
// Every call is atomic with respect to the others, so a sequence of calls
// behaves as the same calls on KVC in some serial order (KVC.RouteStats
// aside: the read path does not count).
type SyncKVC struct {
	mu      sync.RWMutex
	k       *policy.KVC
	epsilon int
	scratch sync.Pool // *[]int of len Decode
}

// NewSyncKVC returns a concurrency-safe KVC-Router.
func NewSyncKVC(cfg policy.KVCConfig) (*SyncKVC, error) {
	k, err := policy.NewKVC(cfg)
	if err != nil {
		return nil, err
	}
	s := &SyncKVC{k: k, epsilon: cfg.Epsilon}
	s.scratch.New = func() any {
		v := make([]int, cfg.Decode)
		return &v
	}
	return s, nil
}

// Route is KVC.Route under the read lock.
func (s *SyncKVC) Route(ds *policy.Dispatch) int {
	ov := s.scratch.Get().(*[]int)
	s.mu.RLock()
	d, _ := s.k.RouteShared(ds, *ov)
	s.mu.RUnlock()
	s.scratch.Put(ov)
	return d
}

// Begin is KVC.Begin.
func (s *SyncKVC) Begin(ds *policy.Dispatch) policy.Step {
	if ds.Tries < s.epsilon {
		ov := s.scratch.Get().(*[]int)
		s.mu.RLock()
		d, fast := s.k.RouteShared(ds, *ov)
		s.mu.RUnlock()
		s.scratch.Put(ov)
		if fast {
			return policy.Step{Action: policy.ActAdmit, D: d}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.k.Begin(ds)
}

// Admitted is KVC.Admitted.
func (s *SyncKVC) Admitted(ds *policy.Dispatch, d int, mode policy.Mode) policy.Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.k.Admitted(ds, d, mode)
}

// Rejected is KVC.Rejected.
func (s *SyncKVC) Rejected(ds *policy.Dispatch, d int, reason string) policy.Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.k.Rejected(ds, d, reason)
}

// Finished is KVC.Finished.
func (s *SyncKVC) Finished(d int) {
	s.mu.Lock()
	s.k.Finished(d)
	s.mu.Unlock()
}

// Evicted is KVC.Evicted.
func (s *SyncKVC) Evicted(d int, sess int32) {
	s.mu.Lock()
	s.k.Evicted(d, sess)
	s.mu.Unlock()
}

// Pin is KVC.Pin.
func (s *SyncKVC) Pin(sess int32) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.k.Pin(sess)
}

// Inflight is KVC.Inflight.
func (s *SyncKVC) Inflight(d int) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.k.Inflight(d)
}

// Rejects is KVC.Rejects.
func (s *SyncKVC) Rejects(sess int32, d int) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.k.Rejects(sess, d)
}

// Stats is KVC.Stats.
func (s *SyncKVC) Stats(sess int32) policy.SessionStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.k.Stats(sess)
}

// Sessions is KVC.Sessions (f runs under the read lock: it must not call
// back into s's write methods).
func (s *SyncKVC) Sessions(f func(sess int32, st policy.SessionStats)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.k.Sessions(f)
}

package policy

import "sync"

// SyncKVC is a concurrency-safe front for KVC, for a router that takes
// requests from many goroutines (the emulator's router actor is
// single-threaded and uses KVC directly).
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
	k       *KVC
	scratch sync.Pool // *[]int of len Decode
}

// NewSyncKVC returns a concurrency-safe KVC-Router.
func NewSyncKVC(cfg KVCConfig) (*SyncKVC, error) {
	k, err := NewKVC(cfg)
	if err != nil {
		return nil, err
	}
	s := &SyncKVC{k: k}
	s.scratch.New = func() any {
		v := make([]int, cfg.Decode)
		return &v
	}
	return s, nil
}

// Route is KVC.Route under the read lock.
func (s *SyncKVC) Route(ds *Dispatch) int {
	ov := s.scratch.Get().(*[]int)
	s.mu.RLock()
	d, _, _ := s.k.route(ds, s.k.sess[ds.Req.Session], *ov)
	s.mu.RUnlock()
	s.scratch.Put(ov)
	return d
}

// Begin is KVC.Begin.
func (s *SyncKVC) Begin(ds *Dispatch) Step {
	if ds.Tries < s.k.cfg.Epsilon {
		ov := s.scratch.Get().(*[]int)
		s.mu.RLock()
		st := s.k.sess[ds.Req.Session]
		d, degenerate := -1, false
		if st != nil {
			d, degenerate, _ = s.k.route(ds, st, *ov)
		}
		s.mu.RUnlock()
		s.scratch.Put(ov)
		if st != nil && d >= 0 && !degenerate {
			return Step{Action: ActAdmit, D: d}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.k.Begin(ds)
}

// Admitted is KVC.Admitted.
func (s *SyncKVC) Admitted(ds *Dispatch, d int, mode Mode) Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.k.Admitted(ds, d, mode)
}

// Rejected is KVC.Rejected.
func (s *SyncKVC) Rejected(ds *Dispatch, d int, reason string) Step {
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

// Rejects is KVC.Rejects.
func (s *SyncKVC) Rejects(sess int32, d int) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.k.Rejects(sess, d)
}

// Stats is KVC.Stats.
func (s *SyncKVC) Stats(sess int32) SessionStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.k.Stats(sess)
}

// Sessions is KVC.Sessions (f runs under the read lock: it must not call
// back into s's write methods).
func (s *SyncKVC) Sessions(f func(sess int32, st SessionStats)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.k.Sessions(f)
}

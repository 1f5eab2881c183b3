package policy

import "math"

// Candidate is one decode worker as Algorithm 1 saw it for a request: the
// terms of its lexicographic key (overlap + α·sticky, sticky, −inflight,
// −assigned) and why it could not be chosen. It is what routing_log.jsonl
// records per try.
type Candidate struct {
	D        int
	Overlap  int     // blocks of the request recorded on D
	Sticky   bool    // the session is pinned to D
	Score    float64 // overlap + α·sticky
	Inflight int
	Assigned int64
	Rejects  int  // rejects[s, D]
	Blocked  bool // blacklisted: rejects[s, D] ≥ τ_reject
	Tried    bool // already tried for this request
	// Loaded: LoadFloor skips it (not the pinned worker, and its inflight
	// is at least the least inflight among the candidates + LoadFloor).
	Loaded bool
}

// Eligible reports whether Route could pick the candidate outside line 4's
// degenerate branch.
func (c Candidate) Eligible() bool { return !c.Blocked && !c.Tried && !c.Loaded }

// Key is the candidate's lexicographic key (overlap + α·sticky, sticky,
// −inflight, −assigned).
func (c Candidate) Key() [4]float64 {
	s := 0.0
	if c.Sticky {
		s = 1
	}
	return [4]float64{c.Score, s, float64(-c.Inflight), float64(-c.Assigned)}
}

// Explain appends to dst every decode worker's Candidate for ds in the
// router's current state, the state Route reads: call it before Begin, or
// after Rejected when it returned ActAdmit. Its overlaps are line 6's as
// Route counts them (own_overlap included), and Loaded marks the workers
// LoadFloor skips, so the eligible candidate with the largest key is
// Route's choice. It changes nothing but Route's scratch (not for
// concurrent use, unlike RouteShared), where it leaves the overlap for
// the Route of the same try (and takes the one that Route left): the
// overlap of a try is counted once whether or not it is explained.
func (k *KVC) Explain(ds *Dispatch, dst []Candidate) []Candidate {
	nd, tau := k.cfg.Decode, int32(k.cfg.TauReject)
	st := k.sess[ds.Req.Session]
	pin, rej := -1, k.noRejects
	if st != nil {
		pin, rej = int(st.pin), st.rejects
	}
	k.cachedOverlap(ds, st)
	ov := k.overlap[:nd]
	ceiling := math.MaxInt
	if k.cfg.LoadFloor > 0 {
		for d := 0; d < nd; d++ {
			if rej[d] < tau && !ds.wasTried(d) { // a candidate exists: the floor is defined
				ceiling = k.loadCeiling(rej[:nd], ds.tried)
				break
			}
		}
	}
	for d := 0; d < nd; d++ {
		c := Candidate{D: d, Overlap: ov[d], Sticky: d == pin, Score: float64(ov[d]),
			Inflight: k.inflight[d], Assigned: k.assigned[d], Rejects: int(rej[d]),
			Blocked: rej[d] >= tau, Tried: ds.wasTried(d)}
		if c.Sticky {
			c.Score += k.cfg.Alpha
		} else {
			c.Loaded = c.Inflight >= ceiling
		}
		dst = append(dst, c)
	}
	return dst
}

// Explain is KVC.Explain over the scoring router (call it before Begin).
func (p *KVScore) Explain(ds *Dispatch, dst []Candidate) []Candidate { return p.k.Explain(ds, dst) }

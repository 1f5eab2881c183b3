package policy

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
}

// Eligible reports whether Route could pick the candidate outside line 4's
// degenerate branch.
func (c Candidate) Eligible() bool { return !c.Blocked && !c.Tried }

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
// after Rejected when it returned ActAdmit. It changes nothing (but Route's
// scratch: not for concurrent use, unlike RouteShared) and is only
// called when decisions are logged, so Route itself pays nothing for it.
func (k *KVC) Explain(ds *Dispatch, dst []Candidate) []Candidate {
	nd, tau := k.cfg.Decode, int32(k.cfg.TauReject)
	pin, rej := -1, k.noRejects
	if st := k.sess[ds.Req.Session]; st != nil {
		pin, rej = int(st.pin), st.rejects
	}
	ov := k.overlap[:nd] // Route's scratch: Explain is not called during a Route
	clear(ov)
	k.index.OverlapOwned(ds.Req.Blocks, pin, ds.Req.Session, ov)
	for d := 0; d < nd; d++ {
		c := Candidate{D: d, Overlap: ov[d], Sticky: d == pin, Score: float64(ov[d]),
			Inflight: k.inflight[d], Assigned: k.assigned[d], Rejects: int(rej[d]),
			Blocked: rej[d] >= tau, Tried: ds.wasTried(d)}
		if c.Sticky {
			c.Score += k.cfg.Alpha
		}
		dst = append(dst, c)
	}
	return dst
}

// Explain is KVC.Explain over the scoring router (call it before Begin).
func (p *KVScore) Explain(ds *Dispatch, dst []Candidate) []Candidate { return p.k.Explain(ds, dst) }

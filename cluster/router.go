package cluster

import (
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
)

// routerNode runs a P/D routing policy; it writes a Job's routing fields.
type routerNode struct {
	outbox
	pol       RouterPolicy
	adm       admissionPolicy // nil for policies without admission
	fb        feedbackPolicy  // nil for policies that need no feedback
	prefill   []Addr
	decode    []Addr
	decisions int64
	f         *routerFaults // nil: no faults
	obs       *routerObs    // nil: not observed (see Observe)
	// fit is the largest request (input + output tokens) any decode
	// worker's pool can hold; a larger one fails at once with
	// gpu.ReasonExceedsPool, before any prefill (0: not checked).
	fit       int
	ctx       int // Limits.Context: longer requests fail with gpu.ReasonExceedsContext
	collector Addr
	// admissions are Admissions handed back in AdmitReplies, for reuse.
	admissions []*Admission
	// dss allocates the Dispatches (never reused: a Job keeps its Reasons).
	dss policy.Dispatches
	// kv names the KV cause of Seeds, Reseeds and Fallbacks (kvcause.go).
	kv kvCauses
	// forget, when set, forgets idle sessions (forget.go); forgot sums them.
	forget *sessionLRU
	forgot forgotSessions
}

// admission returns an Admission for job and ds, reused if one is free.
func (n *routerNode) admission(job *gpu.Job, ds *policy.Dispatch) *Admission {
	var a *Admission
	if k := len(n.admissions); k > 0 {
		a, n.admissions = n.admissions[k-1], n.admissions[:k-1]
	} else {
		a = &Admission{}
	}
	*a = Admission{Job: job, DS: ds}
	return a
}

func (n *routerNode) apply(now time.Duration, job *gpu.Job, ds *policy.Dispatch, st policy.Step) {
	n.observed(now, job, ds, st, nil, false, false)
}

// observed is apply with the routing log: the step st of the policy (on
// Begin, with the candidates cands, or after a rejection) is fixed for
// the cluster's health first, then logged (log: the router observes),
// so the log records what the router did: a try at a worker known down
// as rejected ("router: decode worker down"), then the real one.
func (n *routerNode) observed(now time.Duration, job *gpu.Job, ds *policy.Dispatch, st policy.Step, cands []policy.Candidate, rejected, log bool) {
	n.decisions++
	if n.f != nil {
		var ok bool
		if st, cands, rejected, ok = n.fix(now, job, ds, st, cands, rejected, log); !ok {
			return
		}
	}
	if log {
		n.obs.step(now, ds, st, cands, rejected)
	}
	n.kvStep(job, ds, st) // kvcause.go
	switch st.Action {
	case policy.ActAdmit:
		n.send(n.decode[st.D], Admit{n.admission(job, ds)}, 0)
	case policy.ActPrefill:
		// The router owns the job again (Seed/Reseed: the decode worker only
		// kept a reservation; Fallback/Vanilla: no decode worker saw it yet).
		job.Mode, job.P, job.D = st.Mode, st.P, st.D
		job.Reasons = ds.Reasons
		job.Unadmitted = st.Unadmitted
		if st.Unadmitted {
			job.Tries = ds.Tries
			job.Admitted = now
		}
		n.send(n.prefill[st.P], Prefill{job}, 0)
	case policy.ActRun:
		// Admission-free policies: the decode worker runs it Direct.
		job.Mode, job.P, job.D, job.Unadmitted = st.Mode, -1, st.D, true
		n.send(n.decode[st.D], RunJob{job}, 0)
	case policy.ActNone:
		// Direct: the decode worker owns and runs the job; do not touch it.
	}
	if st.Action != policy.ActAdmit && n.f == nil {
		// Routing ended: nothing reads ds any more (the job copied its
		// tries; faults, which re-dispatch, keep theirs).
		n.dss.Recycle(ds)
	}
}

func (n *routerNode) Handle(now time.Duration, msg any) Ready {
	if n.f != nil && n.faultHandle(now, msg) || failTooLong(&n.outbox, n.collector, n.ctx, msg, now) {
		return n.ready(0, false)
	}
	switch m := msg.(type) {
	case NewJob:
		if r := m.Job.Req; n.fit > 0 && r.InputLen+r.OutputLen > n.fit {
			// No worker could ever hold it: fail now rather than prefill
			// it on P (possibly for hours) and fail on D.
			m.Job.Failed, m.Job.Done = gpu.ReasonExceedsPool, now
			n.send(n.collector, JobEnded{m.Job}, 0)
			break
		}
		if n.forget != nil {
			n.forgetIdle(now, m.Job.Req.Session)
		}
		ds := n.dss.New(m.Job.Req)
		if n.obs == nil {
			n.apply(now, m.Job, ds, n.pol.Begin(ds))
			break
		}
		cands := n.obs.begin(ds, true)
		n.observed(now, m.Job, ds, n.pol.Begin(ds), cands, false, true)
	case AdmitReply:
		if n.obs != nil {
			n.obs.begin(m.DS, false)
			n.obs.reply(m)
		}
		var st policy.Step
		if m.Mode != policy.ModeNone {
			st = n.adm.Admitted(m.DS, m.D, m.Mode)
		} else {
			st = n.adm.Rejected(m.DS, m.D, m.Reason)
		}
		job, ds := m.Job, m.DS
		n.admissions = append(n.admissions, m.Admission) // read no more
		n.observed(now, job, ds, st, nil, m.Mode == policy.ModeNone, n.obs != nil)
	case Finished:
		if n.fb != nil {
			n.fb.Finished(m.D)
		}
	case *Evicted:
		n.kv.lost(m.Session, m.D, m.At, m.Cause, m.For)
		if n.fb != nil {
			n.fb.Evicted(m.D, m.Session)
		}
	}
	return n.ready(0, false)
}

// sessions returns the policy's per-session counters (nil if it has none).
func (n *routerNode) sessions(f func(s int32, st policy.SessionStats)) bool {
	k, ok := n.pol.(sessionPolicy)
	if ok {
		k.Sessions(f)
	}
	return ok
}

// NewRouter returns a P/D router node running pol over the prefill and
// decode workers at the given addresses (benchmarks and tests; Build wires
// its own).
func NewRouter(pol RouterPolicy, prefill, decode []Addr) Node {
	n := &routerNode{pol: pol, prefill: prefill, decode: decode}
	n.adm, _ = pol.(admissionPolicy)
	n.fb, _ = pol.(feedbackPolicy)
	return n
}

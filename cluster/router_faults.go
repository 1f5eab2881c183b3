package cluster

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/topology"
)

// routerFaults is the router's fault state: its health view, what it
// believes resident where (to forget it when a worker dies), the retry
// budget and the per-fault counters.
type routerFaults struct {
	h         *health
	detect    time.Duration
	budget    int
	collector Addr
	believed  []map[int32]struct{} // by decode index
	reseed    map[int32]int        // session -> fault that destroyed its KV
	stats     faultStatsByID
	noPath    int64 // requests that found no healthy decode worker and waited
	events    []FaultEvent
	up        map[int]bool // faults whose end the router heard of
}

func (n *routerNode) faultHandle(now time.Duration, msg any) bool {
	f := n.f
	switch m := msg.(type) {
	case Health:
		n.learn(now, m)
		return true
	case Retry:
		j := m.Job
		if n.fb != nil && j.D >= 0 && j.Mode != policy.ModeNone {
			n.fb.Finished(j.D)
		}
		id := int(j.FaultHit) - 1
		if id >= 0 {
			f.stats.get(id)
			// A lost request or a failed transfer is evidence of the
			// fault: the router need not wait for the probe.
			if e := f.events[id]; !f.up[id] && e.Kind != topology.FaultSlow {
				n.learn(now, Health{Fault: id, Target: e.Target, Index: e.Index, Ds: e.Ds})
			}
		}
		if m.Wait { // waited for a fault to end: dispatch again, budget intact
			nj := &gpu.Job{Req: j.Req, P: -1, D: -1, Arrival: j.Arrival, Released: j.Released, Retries: j.Retries, RetryReasons: j.RetryReasons}
			n.redispatch(now, nj, j)
			return true
		}
		if j.Retries >= f.budget {
			if f.budget > 0 {
				j.Failed = fmt.Sprintf("%s (retry budget %d spent)", j.Failed, f.budget)
			}
			if len(j.RetryReasons) > 0 {
				j.Failed = "attempts: " + joinReasons(j.RetryReasons) + "; last: " + j.Failed
			}
			j.Done = now
			if id >= 0 {
				f.stats[id].failed++
			}
			n.send(f.collector, JobEnded{j}, 0)
			return true
		}
		if id >= 0 {
			f.stats[id].retried++
		}
		nj := &gpu.Job{Req: j.Req, P: -1, D: -1, Arrival: j.Arrival, Released: j.Released, Retries: j.Retries + 1,
			RetryReasons: append(slices.Clip(j.RetryReasons), j.Failed)}
		n.redispatch(now, nj, j)
		return true
	case *Evicted:
		delete(f.believed[m.D], m.Session)
	}
	return false
}

// redispatch routes nj, a new attempt of the request lost attempt
// failed, from the start; the routing log's line of the request then
// starts with the lost attempt (reply "lost", its reason) and goes on
// with the new attempt's tries, so it ends at the worker that served it.
func (n *routerNode) redispatch(now time.Duration, nj, lost *gpu.Job) {
	ds := n.dss.New(nj.Req)
	if n.obs == nil {
		n.observed(now, nj, ds, n.pol.Begin(ds), nil, false, false)
		return
	}
	cands := n.obs.begin(ds, true)
	if n.obs.log {
		n.obs.lost(now, ds, lost.D, lost.Failed)
	}
	n.observed(now, nj, ds, n.pol.Begin(ds), cands, false, true)
}

// learn applies what the router learnt of a fault (a probe's verdict or
// the evidence of a lost request): the health view, the detection time,
// and on a decode worker's loss its beliefs about that worker.
func (n *routerNode) learn(now time.Duration, m Health) {
	f := n.f
	if m.Up {
		f.up[m.Fault] = true
	} else if f.h.downFaultOf(m) == int32(m.Fault+1) {
		return // known already
	}
	f.h.apply(m)
	st := f.stats.get(m.Fault)
	if !m.Up && st.detected < 0 {
		st.detected = now
	}
	{
		if !m.Up && m.Target == KindDecode {
			// Forget what the dead worker held (sorted: deterministic).
			ss := slices.Sorted(maps.Keys(f.believed[m.Index]))
			for _, s := range ss {
				if n.fb != nil {
					n.fb.Evicted(m.Index, s)
				}
				f.reseed[s] = m.Fault
			}
			n.kv.crashed(m.Index, f.events[m.Fault].At) // kvcause.go
			clear(f.believed[m.Index])
		}
	}
}

func joinReasons(rs []string) string {
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += ", "
		}
		out += r
	}
	return out
}

// fix turns a policy's step into one the healthy cluster can carry out
// (see docs/MODEL.md §"Faults"); false when the job was handed elsewhere.
func (n *routerNode) fix(now time.Duration, job *gpu.Job, ds *policy.Dispatch, st policy.Step, cands []policy.Candidate, rejected, log bool) (policy.Step, []policy.Candidate, bool, bool) {
	f := n.f
	h := f.h
	for {
		switch st.Action {
		case policy.ActAdmit:
			if h.reachable(st.D) {
				return st, cands, rejected, true
			}
			// Known down (or unreachable from every prefill worker): the
			// router does not ask it; to the policy that is a rejection
			// (and in the routing log, a try rejected by the router).
			const reason = "router: decode worker down"
			if log {
				n.obs.step(now, ds, st, cands, rejected)
				n.obs.reply(AdmitReply{&Admission{DS: ds, D: st.D, Reason: reason}})
			}
			st, cands, rejected = n.adm.Rejected(ds, st.D, reason), nil, true
			continue
		case policy.ActPrefill:
			if p := h.prefillFor(st.P, st.D); p >= 0 {
				st.P = p
				break
			}
			if !st.Unadmitted {
				// Admitted by a worker no prefill worker can reach now:
				// release its reservation there and retry.
				job.Mode, job.P, job.D = st.Mode, -1, st.D
				job.Failed, job.FaultHit = "fault: no path to admitting decode worker", h.downFault(-1, st.D)
				if job.FaultHit == 0 {
					for p := range h.p {
						if id := h.downFault(p, st.D); id != 0 {
							job.FaultHit = id
							break
						}
					}
				}
				n.send(n.decode[st.D], KVReady{job}, 0)
				return st, cands, rejected, false
			}
			d := h.nextReachable(st.D)
			if d < 0 {
				n.wait(job)
				return st, cands, rejected, false
			}
			st.D, st.P = d, h.prefillFor(st.P, d)
		case policy.ActRun:
			if h.d[st.D] == 0 {
				break
			}
			// The pinned worker is down: reseed elsewhere.
			d := h.nextReachable(st.D)
			if d < 0 {
				n.wait(job)
				return st, cands, rejected, false
			}
			mode := policy.ModeReseed
			if job.Req.Turn == 0 {
				mode = policy.ModeSeed
			}
			st = policy.Step{Action: policy.ActPrefill, P: h.prefillFor(-1, d), D: d, Mode: mode, Unadmitted: true}
		}
		break
	}
	// Beliefs: where the session's KV will be.
	s := job.Req.Session
	switch {
	case st.Action == policy.ActNone || st.Action == policy.ActRun ||
		(st.Action == policy.ActPrefill && (st.Mode == policy.ModeSeed || st.Mode == policy.ModeReseed)):
		for d := range f.believed {
			if d != st.D {
				delete(f.believed[d], s)
			}
		}
		f.believed[st.D][s] = struct{}{}
	}
	if id, ok := f.reseed[s]; ok && st.Action != policy.ActAdmit {
		delete(f.reseed, s)
		if st.Action == policy.ActPrefill {
			f.stats.get(id).reseeded++
		}
	}
	return st, cands, rejected, true
}

// wait: no decode worker is reachable. The request is attributed to the
// fault that keeps one unreachable, preferring one that ends: it tries
// again after the detection delay without spending its retry budget (a
// wait is not a dispatch). When every such fault is permanent nothing
// will change, and it fails now.
func (n *routerNode) wait(job *gpu.Job) {
	f := n.f
	f.noPath++
	id, ends := f.blocking()
	job.Failed, job.FaultHit = "fault: no healthy decode worker", id
	if id > 0 {
		job.Failed += " (" + f.describe(int(id)-1) + ")"
	}
	if !ends {
		job.Failed += "; no fault that ends"
		job.Retries = f.budget // nothing to wait for: fail now
		n.send(n.self, Retry{Job: job}, 0)
		return
	}
	n.send(n.self, Retry{Job: job, Wait: true}, f.detect)
}

// blocking returns the fault (id + 1) that keeps a decode worker
// unreachable, one that ends if any does (ends), the first in decode
// order otherwise (0: none known).
func (f *routerFaults) blocking() (id int32, ends bool) {
	h := f.h
	for d := range h.d {
		ids := []int32{h.d[d]}
		if h.d[d] == 0 {
			ids = ids[:0]
			for p := range h.p {
				ids = append(ids, h.downFault(p, d))
			}
		}
		for _, x := range ids {
			if x == 0 {
				continue
			}
			if id == 0 {
				id = x
			}
			if f.events[x-1].End > 0 {
				return x, true
			}
		}
	}
	return id, false
}

// describe names fault id for a failure reason ("decode d1 crashed").
func (f *routerFaults) describe(id int) string {
	e := f.events[id]
	switch e.Kind {
	case topology.FaultCut:
		return "link " + e.Name + " cut"
	case topology.FaultSlow:
		return string(e.Target) + " " + e.Name + " slowed"
	}
	return string(e.Target) + " " + e.Name + " crashed"
}

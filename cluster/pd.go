package cluster

import (
	"slices"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/transfer"
	"github.com/pdemu/pdemu/workload"
)

// ---------------------------------------------------------------- driver

// driverNode releases the workload's requests (workload.Driver) and
// creates their Jobs.
type driverNode struct {
	outbox
	drv       *workload.Driver
	router    Addr
	collector Addr
	done      bool
	faults    *injector          // nil: no faults
	live      map[int64]*gpu.Job // released, not ended (Cluster.InFlight)
	released  int
	jobs      []gpu.Job // newJob's slab
}

// jobSlab is how many Jobs newJob allocates at once.
const jobSlab = 64

// newJob returns a zero Job from a slab allocated jobSlab at a time (one
// allocation per request was the driver's whole share of a run's). A
// slab stays in memory while any of its Jobs is referenced; Jobs are
// only ever handled by pointer, so sharing an array changes nothing else.
func (n *driverNode) newJob() *gpu.Job {
	if len(n.jobs) == 0 {
		n.jobs = make([]gpu.Job, jobSlab)
	}
	j := &n.jobs[0]
	n.jobs = n.jobs[1:]
	return j
}

func (n *driverNode) Handle(now time.Duration, msg any) Ready {
	var err error
	switch m := msg.(type) {
	case Start:
		err = n.drv.Start(now)
		if n.faults != nil {
			n.faults.start(&n.outbox, now)
		}
	case Release:
		job := n.newJob()
		*job = gpu.Job{Req: m.Req, P: -1, D: -1, Arrival: now}
		n.track(job)
		n.send(n.router, NewJob{job}, 0)
		err = n.drv.Released(m.Req, now)
	case RequestEnded:
		delete(n.live, m.Req.ID)
		err = n.drv.Ended(m.Req, now)
	case InjectTick:
		n.faults.tick(&n.outbox, now, !n.drv.Done())
	}
	rels := n.drv.Ready()
	if err != nil {
		n.send(RunAddr, Failed{err}, 0)
		return n.ready(0, false)
	}
	for _, r := range rels.Out {
		n.send(n.self, Release{r.Req}, r.At-now)
	}
	if !n.done && n.drv.Done() {
		n.done = true
		n.send(n.collector, DriverDone{Total: n.drv.Read()}, 0)
	}
	return n.ready(0, false)
}

// ---------------------------------------------------------------- router

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
	collector Addr
	// admissions are Admissions handed back in AdmitReplies, for reuse.
	admissions []*Admission
	// dss allocates the Dispatches (never reused: a Job keeps its Reasons).
	dss policy.Dispatches
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
	n.decisions++
	if n.f != nil {
		var ok bool
		if st, ok = n.fix(now, job, ds, st); !ok {
			return
		}
	}
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
}

func (n *routerNode) Handle(now time.Duration, msg any) Ready {
	if n.f != nil && n.faultHandle(now, msg) {
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
		ds := n.dss.New(m.Job.Req)
		if n.obs == nil {
			n.apply(now, m.Job, ds, n.pol.Begin(ds))
			break
		}
		cands := n.obs.begin(ds, true)
		st := n.pol.Begin(ds)
		n.obs.step(now, ds, st, cands, false)
		n.apply(now, m.Job, ds, st)
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
		if n.obs != nil {
			n.obs.step(now, m.DS, st, nil, m.Mode == policy.ModeNone)
		}
		job, ds := m.Job, m.DS
		n.admissions = append(n.admissions, m.Admission) // read no more
		n.apply(now, job, ds, st)
	case Finished:
		if n.fb != nil {
			n.fb.Finished(m.D)
		}
	case *Evicted:
		if n.fb != nil {
			n.fb.Evicted(m.D, m.Session)
		}
	}
	return n.ready(0, false)
}

// sessions returns the policy's per-session counters (nil if it has none).
func (n *routerNode) sessions() map[int32]policy.SessionStats {
	k, ok := n.pol.(sessionPolicy)
	if !ok {
		return nil
	}
	out := map[int32]policy.SessionStats{}
	k.Sessions(func(s int32, st policy.SessionStats) { out[s] = st })
	return out
}

// ---------------------------------------------------------------- decode

// decodeNode is a decode worker (gpu.DecodeWorker).
type decodeNode struct {
	outbox
	idx       int
	w         *gpu.DecodeWorker
	router    Addr
	collector Addr
	series    *metrics.Series
	f         *decodeFaults // nil: no faults
	sync      *dpSync       // D→P sync (dpsync.go); nil when off
	// evicted[s] is this worker's Evicted for session s, sent by pointer
	// (an Evicted boxed in an interface is an allocation per eviction).
	evicted []Evicted
}

// evictedMsg returns the *Evicted telling the router that this worker
// evicted session s. The value is immutable and shared by every send for
// (this worker, s): receivers may keep or read it at any time. Growing
// evicted copies it, but earlier pointers stay valid (and equal in value).
func (n *decodeNode) evictedMsg(s int32) *Evicted {
	if int(s) >= len(n.evicted) {
		n.evicted = slices.Grow(n.evicted, int(s)+1-len(n.evicted))
		for i := len(n.evicted); i <= int(s); i++ {
			n.evicted = append(n.evicted, Evicted{D: n.idx, Session: int32(i)})
		}
	}
	return &n.evicted[s]
}

func (n *decodeNode) Handle(now time.Duration, msg any) Ready {
	if n.f != nil {
		if rd, ok := n.faultHandle(now, msg); ok {
			return rd
		}
	}
	switch m := msg.(type) {
	case Admit:
		m.Job.D = n.idx
		mode, reason := n.w.Admit(now, m.Job)
		if n.f != nil && mode != policy.ModeNone {
			n.f.admitted(m.Job, mode)
		}
		if mode != policy.ModeNone {
			// The router does not touch the job until it hears back.
			m.Job.Tries, m.Job.Reasons = m.DS.Tries+1, m.DS.Reasons
		}
		m.D, m.Mode, m.Reason = n.idx, mode, reason
		n.send(n.router, AdmitReply{m.Admission}, 0)
	case KVReady:
		n.sync.arrived(m.Job)
		n.w.Arrive(now, m.Job)
	case RunJob:
		m.Job.D = n.idx
		n.w.Run(now, m.Job)
	case *Wake:
		n.w.Advance(now)
	}
	rd := n.w.Ready()
	for _, ev := range rd.Out {
		switch ev.Kind {
		case gpu.EvDone, gpu.EvFailed:
			if n.f != nil {
				delete(n.f.held, ev.Job.Req.ID)
				if ev.Job.FaultHit != 0 {
					n.send(n.router, Retry{ev.Job}, 0)
					continue
				}
			}
			n.sync.ended(&n.outbox, ev.Job, n.idx)
			n.send(n.router, Finished{n.idx}, 0)
			n.send(n.collector, JobEnded{ev.Job}, 0)
		case gpu.EvEvicted:
			n.send(n.router, n.evictedMsg(ev.Session), 0)
		}
	}
	n.series.Observe(now, n.w.Used(), n.w.Queued(), n.w.Running())
	return n.ready(rd.Wake, rd.HasWake)
}

// ---------------------------------------------------------------- prefill

// prefillNode is a prefill worker (gpu.PrefillWorker).
type prefillNode struct {
	outbox
	w      *gpu.PrefillWorker
	links  []Addr // by decode index
	series *metrics.Series
	f      *prefillFaults // nil: no faults
}

func (n *prefillNode) Handle(now time.Duration, msg any) Ready {
	if n.f != nil {
		if rd, ok := n.faultHandle(now, msg); ok {
			return rd
		}
	}
	if m, ok := msg.(Prefill); ok {
		n.w.Submit(now, m.Job)
	} else {
		n.handleSync(msg) // dpsync.go
	}
	n.w.Advance(now)
	rd := n.w.Ready()
	for _, j := range rd.Out {
		if n.f != nil && !n.f.out(&n.outbox, j) {
			continue
		}
		n.send(n.links[j.D], Transfer{j}, 0)
	}
	n.series.Observe(now, n.w.CacheUsed(), n.w.Queued(), n.w.Running())
	return n.ready(rd.Wake, rd.HasWake)
}

// ---------------------------------------------------------------- link

// linkNode is one NIC of a prefill worker; every link that names the
// device shares its bandwidth.
type linkNode struct {
	outbox
	nic           *transfer.NIC
	bytesPerToken int64
	rateCap       rateCaps // per decode index: the link's own line rate
	decode        []Addr
	inflight      map[uint64]*gpu.Job
	f             *linkFaults           // nil: no faults
	name          string                // links.csv nic
	rec           *metrics.LinkRecorder // nil: not recorded
	sync          *linkSync             // D→P sync (dpsync.go); nil when off
}

func (n *linkNode) Handle(now time.Duration, msg any) Ready {
	if m, ok := msg.(SyncXfer); ok {
		n.startSync(now, m) // dpsync.go
	}
	if m, ok := msg.(Transfer); ok {
		j := m.Job
		j.TransferBytes = int64(j.Req.InputLen) * n.bytesPerToken
		j.TransferStart = now
		id := uint64(j.Req.ID)
		n.inflight[id] = j
		n.nic.Start(now, id, j.TransferBytes, n.rateCap.at(j.D))
	}
	n.nic.Advance(now)
	rd := n.nic.Ready()
	for _, c := range rd.Out {
		if n.syncDone(c.ID, c.Err) {
			continue
		}
		j := n.inflight[c.ID]
		delete(n.inflight, c.ID)
		j.TransferEnd = c.At
		if c.Err != nil {
			j.Failed = "link: " + c.Err.Error()
			if n.f != nil {
				n.f.blame(j, c.At)
			}
		}
		n.send(n.decode[j.D], KVReady{j}, 0)
	}
	if n.rec != nil {
		b, r := n.nic.Load(now)
		n.rec.Link(now, n.name, b, r, n.nic.Active())
	}
	// Wake only while transfers are in flight: a scheduled fault with
	// nothing on the wire changes nothing until the next Start (which
	// applies it), and waking for it would stretch the run past its end.
	return n.ready(rd.Wake, rd.HasWake && len(n.inflight)+n.syncsInFlight() > 0)
}

// ---------------------------------------------------------------- collector

// collectorNode records every ended Job and tells when the run is done.
type collectorNode struct {
	outbox
	driver   Addr
	col      *metrics.Collector
	total    int
	gotDone  bool
	progress Progress
}

func (n *collectorNode) Handle(now time.Duration, msg any) Ready {
	switch m := msg.(type) {
	case JobEnded:
		if err := n.col.Add(m.Job); err != nil {
			n.send(RunAddr, Failed{err}, 0)
			return n.ready(0, false)
		}
		n.send(n.driver, RequestEnded{m.Job.Req}, 0)
		// A pointer to a reused value: boxing one Progress per request
		// would allocate, and the runtime reads it before the next call.
		n.progress = Progress{Ended: n.col.Ended(), At: now}
		n.send(RunAddr, &n.progress, 0)
	case DriverDone:
		n.total, n.gotDone = m.Total, true
	}
	if n.gotDone && n.col.Ended() >= n.total {
		n.send(RunAddr, Done{}, 0)
	}
	return n.ready(0, false)
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

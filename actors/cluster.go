package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/transfer"
	"github.com/pdemu/pdemu/workload"
)

// Messages between the actors. Pointers hand ownership of a Job over.
type (
	startMsg   struct{}
	releaseMsg struct{ req *workload.Request }
	endedMsg   struct{ req *workload.Request }
	newJobMsg  struct{ job *gpu.Job }
	admitMsg   struct {
		job *gpu.Job
		ds  *policy.Dispatch
	}
	admitReply struct {
		job    *gpu.Job
		ds     *policy.Dispatch
		d      int
		mode   policy.Mode
		reason string
	}
	finishedMsg struct{ d int }
	evictedMsg  struct {
		d       int
		session int32
	}
	prefillMsg  struct{ job *gpu.Job }
	transferMsg struct{ job *gpu.Job }
	kvReadyMsg  struct{ job *gpu.Job }
	runMsg      struct{ job *gpu.Job }
	jobEndedMsg struct{ job *gpu.Job }
	driverDone  struct{ total int }
)

// ---------------------------------------------------------------- driver

type driverActor struct {
	node
	drv       *workload.Driver
	router    *actor.PID
	collector *actor.PID
	run       *runState
	done      bool
}

func (a *driverActor) schedule(rels []workload.Release, err error) {
	if err != nil {
		a.run.fail(err)
		return
	}
	for _, r := range rels {
		a.send(a.self, releaseMsg{r.Req}, r.At-a.now())
	}
	if !a.done && a.drv.Done() {
		a.done = true
		a.send(a.collector, driverDone{total: a.drv.Read()}, 0)
	}
}

func (a *driverActor) handle(msg any) {
	now := a.now()
	switch m := msg.(type) {
	case startMsg:
		a.schedule(a.drv.Start(now))
	case releaseMsg:
		job := &gpu.Job{Req: m.req, P: -1, D: -1, Arrival: now}
		a.send(a.router, newJobMsg{job}, 0)
		a.schedule(a.drv.Released(m.req, now))
	case endedMsg:
		a.schedule(a.drv.Ended(m.req, now))
	}
}

// ---------------------------------------------------------------- router

// routerPolicy is what the router actor needs from a policy.
type routerPolicy interface {
	Begin(ds *policy.Dispatch) policy.Step
}

// admissionPolicy is implemented by policies that use worker-side admission.
type admissionPolicy interface {
	Admitted(ds *policy.Dispatch, d int, mode policy.Mode) policy.Step
	Rejected(ds *policy.Dispatch, d int, reason string) policy.Step
}

// feedbackPolicy is implemented by policies that track load and residency.
type feedbackPolicy interface {
	Finished(d int)
	Evicted(d int, s int32)
}

// sessionPolicy is implemented by policies with per-session counters.
type sessionPolicy interface {
	Sessions(f func(s int32, st policy.SessionStats))
}

type routerActor struct {
	node
	pol       routerPolicy
	adm       admissionPolicy // nil for policies without admission
	fb        feedbackPolicy  // nil for policies that need no feedback
	prefill   []*actor.PID
	decode    []*actor.PID
	decisions int64
}

func (a *routerActor) apply(job *gpu.Job, ds *policy.Dispatch, st policy.Step) {
	a.decisions++
	switch st.Action {
	case policy.ActAdmit:
		a.send(a.decode[st.D], admitMsg{job, ds}, 0)
	case policy.ActPrefill:
		// The router owns the job again (Seed/Reseed: the decode worker only
		// kept a reservation; Fallback/Vanilla: no decode worker saw it yet).
		job.Mode, job.P, job.D = st.Mode, st.P, st.D
		job.Reasons = ds.Reasons
		job.Unadmitted = st.Unadmitted
		if st.Unadmitted {
			job.Tries = ds.Tries
			job.Admitted = a.now()
		}
		a.send(a.prefill[st.P], prefillMsg{job}, 0)
	case policy.ActRun:
		// Admission-free policies: the decode worker runs it Direct.
		job.Mode, job.P, job.D, job.Unadmitted = st.Mode, -1, st.D, true
		a.send(a.decode[st.D], runMsg{job}, 0)
	case policy.ActNone:
		// Direct: the decode worker owns and runs the job; do not touch it.
	}
}

func (a *routerActor) handle(msg any) {
	switch m := msg.(type) {
	case newJobMsg:
		ds := policy.NewDispatch(m.job.Req)
		a.apply(m.job, ds, a.pol.Begin(ds))
	case admitReply:
		if m.mode != policy.ModeNone {
			a.apply(m.job, m.ds, a.adm.Admitted(m.ds, m.d, m.mode))
		} else {
			a.apply(m.job, m.ds, a.adm.Rejected(m.ds, m.d, m.reason))
		}
	case finishedMsg:
		if a.fb != nil {
			a.fb.Finished(m.d)
		}
	case evictedMsg:
		if a.fb != nil {
			a.fb.Evicted(m.d, m.session)
		}
	}
}

// ---------------------------------------------------------------- decode

type decodeActor struct {
	node
	idx       int
	w         *gpu.DecodeWorker
	router    *actor.PID
	collector *actor.PID
	series    *metrics.Series
	wake      waker
	sync      *dpSync // D→P sync (dpsync.go); nil when off
}

func (a *decodeActor) handle(msg any) {
	now := a.now()
	switch m := msg.(type) {
	case admitMsg:
		m.job.D = a.idx
		mode, reason := a.w.Admit(now, m.job)
		if mode != policy.ModeNone {
			// The router does not touch the job until it hears back.
			m.job.Tries, m.job.Reasons = m.ds.Tries+1, m.ds.Reasons
		}
		a.send(a.router, admitReply{job: m.job, ds: m.ds, d: a.idx, mode: mode, reason: reason}, 0)
	case kvReadyMsg:
		a.sync.arrived(m.job)
		a.w.Arrive(now, m.job)
	case runMsg:
		m.job.D = a.idx
		a.w.Run(now, m.job)
	case wakeMsg:
		a.wake.fired(m)
		a.w.Advance(now)
	}
	for _, ev := range a.w.Events() {
		switch ev.Kind {
		case gpu.EvDone, gpu.EvFailed:
			a.sync.ended(&a.node, ev.Job, a.idx)
			a.send(a.router, finishedMsg{a.idx}, 0)
			a.send(a.collector, jobEndedMsg{ev.Job}, 0)
		case gpu.EvEvicted:
			a.send(a.router, evictedMsg{a.idx, ev.Session}, 0)
		}
	}
	a.series.Observe(now, a.w.Used(), a.w.Queued(), a.w.Running())
	at, ok := a.w.NextEvent()
	a.wake.ensure(&a.node, at, ok)
}

func (a *decodeActor) query(any) any {
	return workerReport{series: a.series, maxUsed: a.w.MaxUsed(), cap: a.w.Cap()}
}

type workerReport struct {
	series  *metrics.Series
	maxUsed int
	cap     int
}

// ---------------------------------------------------------------- prefill

type prefillActor struct {
	node
	w      *gpu.PrefillWorker
	links  []*actor.PID // by decode index
	series *metrics.Series
	wake   waker
}

func (a *prefillActor) handle(msg any) {
	now := a.now()
	if a.handleSync(msg) {
		msg = nil
	}
	switch m := msg.(type) {
	case prefillMsg:
		a.w.Submit(now, m.job)
	case wakeMsg:
		a.wake.fired(m)
	}
	for _, j := range a.w.Advance(now) {
		a.send(a.links[j.D], transferMsg{j}, 0)
	}
	a.series.Observe(now, a.w.CacheUsed(), a.w.Queued(), a.w.Running())
	at, ok := a.w.NextEvent()
	a.wake.ensure(&a.node, at, ok)
}

func (a *prefillActor) query(any) any { return workerReport{series: a.series} }

// ---------------------------------------------------------------- link

// linkActor owns one NIC of a prefill worker; every link that names the
// device shares its bandwidth.
type linkActor struct {
	node
	nic           *transfer.NIC
	bytesPerToken int64
	rateCap       []float64 // per decode index: the link's own line rate
	decode        []*actor.PID
	inflight      map[uint64]*gpu.Job
	done          []transfer.Completion
	wake          waker
	sync          *linkSync // D→P sync (dpsync.go); nil when off
}

func (a *linkActor) handle(msg any) {
	now := a.now()
	switch m := msg.(type) {
	case transferMsg:
		j := m.job
		j.TransferBytes = int64(j.Req.InputLen) * a.bytesPerToken
		j.TransferStart = now
		id := uint64(j.Req.ID)
		a.inflight[id] = j
		a.nic.Start(now, id, j.TransferBytes, a.rateCap[j.D])
	case syncXferMsg:
		a.startSync(m)
	case wakeMsg:
		a.wake.fired(m)
	}
	a.done = a.nic.Advance(now, a.done[:0])
	for _, c := range a.done {
		if a.syncDone(c.ID, c.Err) {
			continue
		}
		j := a.inflight[c.ID]
		delete(a.inflight, c.ID)
		j.TransferEnd = c.At
		if c.Err != nil {
			j.Failed = "link: " + c.Err.Error()
		}
		a.send(a.decode[j.D], kvReadyMsg{j}, 0)
	}
	// Wake only while transfers are in flight: a scheduled fault with
	// nothing on the wire changes nothing until the next Start (which
	// applies it), and waking for it would stretch the run past its end.
	if len(a.inflight)+a.syncsInFlight() > 0 {
		at, ok := a.nic.NextEvent()
		a.wake.ensure(&a.node, at, ok)
	}
}

// ---------------------------------------------------------------- collector

type collectorActor struct {
	node
	driver  *actor.PID
	col     *metrics.Collector
	run     *runState
	total   int
	gotDone bool
	// progress, when set, is called after each request ends.
	progress func(Progress)
}

func (a *collectorActor) handle(msg any) {
	switch m := msg.(type) {
	case jobEndedMsg:
		if err := a.col.Add(m.job); err != nil {
			a.run.fail(err)
			return
		}
		a.send(a.driver, endedMsg{m.job.Req}, 0)
		if a.progress != nil {
			a.progress(Progress{Ended: a.col.Ended(), Emulated: a.clk.Now()})
		}
	case driverDone:
		a.total, a.gotDone = m.total, true
	}
	if a.gotDone && a.col.Ended() >= a.total {
		a.run.finished()
	}
}

func (a *collectorActor) query(any) any { return a.col }

func (a *routerActor) query(any) any {
	out := map[int32]policy.SessionStats{}
	if k, ok := a.pol.(sessionPolicy); ok {
		k.Sessions(func(s int32, st policy.SessionStats) { out[s] = st })
	}
	return out
}

package cluster

import (
	"fmt"
	"slices"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/topology"
)

// Faults (docs/MODEL.md §"Faults"). The scenario's node faults (crash,
// slow), link cuts and the chaos block's draws form one schedule of
// FaultEvents, numbered in a fixed order. The driver injects them: at
// Start it sends each target node its Crash/Restart/Slowdown at the
// fault's times, and the routers (and the prefill workers, which must not
// send over a dead link) a Health message DetectionDelay after the fault
// and after its end (the health probe). Failed admission RPCs, failed
// transfers and lost requests reach the router as messages too (a
// rejected AdmitReply, Retry); the router retries a request hit by a fault
// up to the retry budget, then ends it failed with the reasons of every
// attempt. Nothing here runs when the scenario has no fault: the nodes'
// fault state is nil and their hot paths unchanged.

// The fault messages.
type (
	// Crash makes a node lose its state and stop (fault Fault). Node: the
	// whole node (the actor runtime fails its actor, and the supervisor
	// restarts it), not one instance of a bucket.
	Crash struct {
		Fault int
		Node  bool
	}
	// Restart brings a crashed node back with fresh state.
	Restart struct{ Fault int }
	// Slowdown multiplies every forward pass of a node by Factor (1 ends
	// the slowdown).
	Slowdown struct {
		Fault  int
		Factor float64
	}
	// Health tells a router (or a prefill worker) that a node or link is
	// down or up again (the health probe's verdict).
	Health struct {
		Fault  int
		Target Kind  // KindDecode, KindPrefill or KindLink
		Index  int   // decode or prefill index (link: the prefill index)
		Ds     []int // KindLink: the decode indexes the dead NIC serves
		Up     bool
	}
	// Retry hands a request hit by a fault back to the router (Job.Failed
	// says why, Job.FaultHit which fault).
	Retry struct{ Job *gpu.Job }
)

// FaultEvent is one fault of the schedule.
type FaultEvent struct {
	ID     int
	Kind   string // topology.FaultCrash, topology.FaultSlow or topology.FaultCut
	Target Kind   // KindDecode, KindPrefill or KindLink
	Index  int    // decode or prefill index; link: prefill index
	Ds     []int  // link: decode indexes served by the NIC
	Inst   int    // KindBucket: the instance (-1: the whole bucket)
	Name   string // worker name, or prefill/device for a NIC
	At     time.Duration
	End    time.Duration // 0: never ends
	Factor float64       // slow
	Chaos  bool
}

// faultStats are what the nodes count per fault.
type faultStats struct {
	detected     time.Duration // -1: not (yet) detected
	lost         int           // requests on the node when it crashed (or in flight on the cut link)
	lostSessions int           // sessions whose KV the crash destroyed
	retried      int
	failed       int
	reseeded     int
}

// buildSchedule numbers the scenario's faults: decode workers, then
// prefill workers (each in file order, each worker's faults in time
// order), then the NICs' cuts in time order.
func buildSchedule(spec *topology.Spec, nics []topology.NIC, nicDs [][]int) []FaultEvent {
	var out []FaultEvent
	add := func(e FaultEvent) {
		e.ID = len(out)
		out = append(out, e)
	}
	for _, ws := range []struct {
		list []topology.Worker
		kind Kind
	}{{spec.Decode, KindDecode}, {spec.Prefill, KindPrefill}} {
		for i, w := range ws.list {
			for _, f := range w.Faults {
				add(FaultEvent{Kind: f.Kind, Target: ws.kind, Index: i, Name: w.Name, At: f.At, End: f.End(), Factor: f.Factor, Chaos: f.Chaos})
			}
		}
	}
	preIdx := map[string]int{}
	for i, w := range spec.Prefill {
		preIdx[w.Name] = i
	}
	for ni, n := range nics {
		var cur *FaultEvent
		for _, f := range n.Faults {
			switch f.Kind {
			case topology.FaultCut:
				if cur == nil {
					add(FaultEvent{Kind: topology.FaultCut, Target: KindLink, Index: preIdx[n.Prefill], Ds: nicDs[ni], Name: n.Prefill + "/" + n.Device, At: f.At, Chaos: f.Chaos})
					cur = &out[len(out)-1]
				}
			case topology.FaultRestore:
				if cur != nil {
					cur.End = max(f.At, cur.At+1)
					cur = nil
				}
			}
		}
	}
	return out
}

// injector is the driver's part: it sends the schedule at Start.
type injector struct {
	events  []FaultEvent
	detect  time.Duration
	decode  []Addr
	prefill []Addr
	router  Addr
	buckets []Addr // fused deployments

	actions []action // the schedule's sends, by time (plan)
	next    int      // the first action not sent yet
	armed   bool     // an InjectTick is pending
}

// action is one send of the schedule: msg to to at emulated time at.
type action struct {
	at  time.Duration
	to  Addr
	msg any
}

// InjectTick is the driver's timer for the fault schedule's next actions.
type InjectTick struct{}

// injectHop bounds the time between two InjectTicks: the schedule is
// sent in steps so that a fault planned after the workload's end never
// keeps a timer pending beyond injectHop (which would stretch the run).
const injectHop = time.Second

func (in *injector) at(to Addr, msg any, at time.Duration) {
	in.actions = append(in.actions, action{at: at, to: to, msg: msg})
}

// start plans the schedule and arms the first tick.
func (in *injector) start(o *outbox, now time.Duration) {
	in.plan()
	slices.SortStableFunc(in.actions, func(a, b action) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	in.arm(o, now)
}

func (in *injector) arm(o *outbox, now time.Duration) {
	if in.armed || in.next >= len(in.actions) {
		return
	}
	in.armed = true
	o.send(o.self, InjectTick{}, min(in.actions[in.next].at, now+injectHop)-now)
}

// tick sends the actions due by now and, while the workload runs
// (running), arms the next tick.
func (in *injector) tick(o *outbox, now time.Duration, running bool) {
	in.armed = false
	for in.next < len(in.actions) && in.actions[in.next].at <= now {
		a := in.actions[in.next]
		o.send(a.to, a.msg, 0)
		in.next++
	}
	if running {
		in.arm(o, now)
	}
}

func (in *injector) plan() {
	if in.buckets != nil {
		in.planPool()
		return
	}
	const now = 0
	for _, e := range in.events {
		at := e.At - now
		var target Addr = -1
		switch e.Target {
		case KindDecode:
			target = in.decode[e.Index]
		case KindPrefill:
			target = in.prefill[e.Index]
		}
		if e.Kind == topology.FaultSlow {
			in.at(target, Slowdown{e.ID, e.Factor}, at)
			if e.End > 0 {
				in.at(target, Slowdown{e.ID, 1}, e.End-now)
			}
			continue
		}
		if target >= 0 {
			in.at(target, Crash{e.ID, true}, at)
			if e.End > 0 {
				in.at(target, Restart{e.ID}, e.End-now)
			}
		}
		// The health probe: the router and every prefill worker (which
		// stop sending towards the dead node or over the dead link).
		h := Health{Fault: e.ID, Target: e.Target, Index: e.Index, Ds: e.Ds}
		up := h
		up.Up = true
		for _, to := range append([]Addr{in.router}, in.prefill...) {
			in.at(to, h, at+in.detect)
			if e.End > 0 {
				in.at(to, up, e.End-now+in.detect)
			}
		}
	}
}

// ---------------------------------------------------------------- health

// health is a node's view of which nodes and links are down: the fault
// that took each down (+1; 0 = up). Pure bookkeeping.
type health struct {
	p, d []int32
	link [][]int32 // [prefill][decode]
}

func newHealth(np, nd int) *health {
	h := &health{p: make([]int32, np), d: make([]int32, nd), link: make([][]int32, np)}
	for i := range h.link {
		h.link[i] = make([]int32, nd)
	}
	return h
}

func (h *health) apply(m Health) {
	v := int32(m.Fault + 1)
	if m.Up {
		v = 0
	}
	switch m.Target {
	case KindDecode:
		h.d[m.Index] = v
	case KindPrefill:
		h.p[m.Index] = v
	case KindLink:
		for _, d := range m.Ds {
			h.link[m.Index][d] = v
		}
	}
}

// downFaultOf is the current state of m's target (for a link: of its
// first decode index).
func (h *health) downFaultOf(m Health) int32 {
	switch m.Target {
	case KindDecode:
		return h.d[m.Index]
	case KindPrefill:
		return h.p[m.Index]
	case KindLink:
		if len(m.Ds) > 0 {
			return h.link[m.Index][m.Ds[0]]
		}
	}
	return 0
}

// pathOK: prefill p can serve decode d (both up, the link alive).
func (h *health) pathOK(p, d int) bool { return h.p[p] == 0 && h.d[d] == 0 && h.link[p][d] == 0 }

// prefillFor returns p itself if it can serve d, else the lowest prefill
// index that can, else -1.
func (h *health) prefillFor(p, d int) int {
	if p >= 0 && p < len(h.p) && h.pathOK(p, d) {
		return p
	}
	for q := range h.p {
		if h.pathOK(q, d) {
			return q
		}
	}
	return -1
}

// reachable: d is up and some prefill worker can reach it.
func (h *health) reachable(d int) bool { return h.d[d] == 0 && h.prefillFor(-1, d) >= 0 }

// nextReachable returns d if reachable, else the next reachable decode
// index after it (cyclically), else -1.
func (h *health) nextReachable(d int) int {
	for i := range h.d {
		if c := (d + i) % len(h.d); h.reachable(c) {
			return c
		}
	}
	return -1
}

// downFault is the fault id (+1) that makes the path p→d unusable.
func (h *health) downFault(p, d int) int32 {
	if p >= 0 && h.p[p] != 0 {
		return h.p[p]
	}
	if h.d[d] != 0 {
		return h.d[d]
	}
	if p >= 0 {
		return h.link[p][d]
	}
	return 0
}

// ---------------------------------------------------------------- slow

// slowCost is a worker's cost model under a Slowdown: every forward pass
// takes factor times as long.
type slowCost struct {
	gpu.Cost
	factor float64
}

func (c *slowCost) scale(d time.Duration) time.Duration {
	if c.factor == 1 {
		return d
	}
	return time.Duration(float64(d) * c.factor)
}

func (c *slowCost) PrefillTime(n, cached int) time.Duration {
	return c.scale(c.Cost.PrefillTime(n, cached))
}

func (c *slowCost) DecodeStepTime(b int, ctx int64) time.Duration {
	return c.scale(c.Cost.DecodeStepTime(b, ctx))
}

func (c *slowCost) StepTime(p gpu.Pass) time.Duration { return c.scale(c.Cost.StepTime(p)) }

// faultCost wraps p in a slowCost when w has slow faults (else p itself).
func faultCost(w topology.Worker, p gpu.Perf) (gpu.Cost, *slowCost) {
	for _, f := range w.Faults {
		if f.Kind == topology.FaultSlow {
			sc := &slowCost{Cost: p, factor: 1}
			return sc, sc
		}
	}
	return p, nil
}

// ---------------------------------------------------------------- decode

// decodeFaults is a decode worker's fault state.
type decodeFaults struct {
	mk     func() *gpu.DecodeWorker // a fresh worker (restart)
	slow   *slowCost
	name   string
	down   int32 // fault id + 1 while crashed
	last   int32 // fault id + 1 of the last crash
	epoch  int32
	detect time.Duration
	held   map[int64]*gpu.Job // jobs the worker runs or queues
	resv   map[int64]int32    // Seed/Reseed admitted, KV not arrived: epoch of the admission
	stats  map[int]*faultStats
}

func (f *decodeFaults) stat(id int) *faultStats {
	s := f.stats[id]
	if s == nil {
		s = &faultStats{detected: -1}
		f.stats[id] = s
	}
	return s
}

// hit marks job failed by fault id for reason and hands it back to the router.
func hit(o *outbox, router Addr, j *gpu.Job, id int32, reason string, delay time.Duration) {
	j.Failed, j.FaultHit = reason, id
	o.send(router, Retry{j}, delay)
}

// handle is the decode node's fault path: it reports whether it handled
// msg completely.
func (n *decodeNode) faultHandle(now time.Duration, msg any) (Ready, bool) {
	f := n.f
	switch m := msg.(type) {
	case Crash:
		f.down = int32(m.Fault + 1)
		f.last = f.down
		f.epoch++
		n.w.Advance(now)
		st := f.stat(m.Fault)
		st.lostSessions = n.w.Sessions()
		ids := make([]int64, 0, len(f.held))
		for id := range f.held {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		reason := fmt.Sprintf("fault: decode %s crashed", f.name)
		for _, id := range ids {
			// Nobody hears from a dead node: the router notices the lost
			// request when its stream times out (the detection delay).
			hit(&n.outbox, n.router, f.held[id], f.down, reason, f.detect)
		}
		st.lost = len(ids)
		clear(f.held)
		clear(f.resv)
		n.w = f.mk()
		n.series.Observe(now, 0, 0, 0)
		return n.ready(0, false), true
	case Restart:
		f.down = 0
		n.series.Observe(now, n.w.Used(), n.w.Queued(), n.w.Running())
		return n.ready(0, false), true
	case Slowdown:
		n.w.Advance(now)
		f.slow.factor = m.Factor
		return Ready{}, false
	}
	if f.down != 0 {
		reason := fmt.Sprintf("fault: decode %s down", f.name)
		switch m := msg.(type) {
		case Admit:
			// The admission RPC times out.
			m.Job.D = n.idx
			m.D, m.Mode, m.Reason = n.idx, policy.ModeNone, reason
			n.send(n.router, AdmitReply{m.Admission}, f.detect)
		case RunJob:
			m.Job.D = n.idx
			hit(&n.outbox, n.router, m.Job, f.down, reason, f.detect)
		case KVReady:
			// A transfer to a crashed node fails.
			hit(&n.outbox, n.router, m.Job, f.down, reason, 0)
		}
		return n.ready(0, false), true
	}
	switch m := msg.(type) {
	case KVReady:
		e, admitted := f.resv[m.Job.Req.ID]
		delete(f.resv, m.Job.Req.ID)
		if admitted && e != f.epoch {
			// Admitted before a crash: the reservation died with it.
			hit(&n.outbox, n.router, m.Job, f.last, fmt.Sprintf("fault: decode %s restarted (reservation lost)", f.name), 0)
			return n.ready(0, false), true
		}
		if m.Job.Failed == "" {
			f.held[m.Job.Req.ID] = m.Job
		}
	case RunJob:
		f.held[m.Job.Req.ID] = m.Job
	}
	return Ready{}, false
}

// admitted records an accepted admission.
func (f *decodeFaults) admitted(j *gpu.Job, mode policy.Mode) {
	switch mode {
	case policy.ModeDirect:
		f.held[j.Req.ID] = j
	case policy.ModeSeed, policy.ModeReseed:
		f.resv[j.Req.ID] = f.epoch
	}
}

// ---------------------------------------------------------------- prefill

// prefillFaults is a prefill worker's fault state.
type prefillFaults struct {
	mk     func() *gpu.PrefillWorker
	name   string
	slow   *slowCost
	down   int32
	detect time.Duration
	h      *health
	idx    int
	router Addr
	decode []Addr
	held   map[int64]*gpu.Job
	stats  map[int]*faultStats
}

// drop hands a job this prefill worker cannot serve back: to its decode
// worker (which holds a reservation to release and then retries it) or
// straight to the router.
func (f *prefillFaults) drop(o *outbox, j *gpu.Job, id int32, reason string, delay time.Duration) {
	j.Failed, j.FaultHit = reason, id
	if !j.Unadmitted && (j.Mode == policy.ModeSeed || j.Mode == policy.ModeReseed) && f.h.d[j.D] == 0 {
		o.send(f.decode[j.D], KVReady{j}, delay)
		return
	}
	o.send(f.router, Retry{j}, delay)
}

func (n *prefillNode) faultHandle(now time.Duration, msg any) (Ready, bool) {
	f := n.f
	switch m := msg.(type) {
	case Health:
		f.h.apply(m)
		return n.ready(0, false), true
	case Crash:
		f.down = int32(m.Fault + 1)
		n.w.Advance(now)
		ids := make([]int64, 0, len(f.held))
		for id := range f.held {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			f.drop(&n.outbox, f.held[id], f.down, fmt.Sprintf("fault: prefill %s crashed", f.name), f.detect)
		}
		if f.stats[m.Fault] == nil {
			f.stats[m.Fault] = &faultStats{detected: -1}
		}
		f.stats[m.Fault].lost = len(ids)
		clear(f.held)
		n.w = f.mk()
		n.series.Observe(now, 0, 0, 0)
		return n.ready(0, false), true
	case Restart:
		f.down = 0
		return n.ready(0, false), true
	case Slowdown:
		n.w.Advance(now)
		f.slow.factor = m.Factor
		return Ready{}, false
	case Prefill:
		if f.down != 0 {
			f.drop(&n.outbox, m.Job, f.down, fmt.Sprintf("fault: prefill %s down", f.name), f.detect)
			return n.ready(0, false), true
		}
		f.held[m.Job.Req.ID] = m.Job
	}
	if f.down != 0 {
		return n.ready(0, false), true
	}
	return Ready{}, false
}

// out decides what happens to a prefilled job: false when the path to
// its decode worker is known dead (the job was handed back).
func (f *prefillFaults) out(o *outbox, j *gpu.Job) bool {
	delete(f.held, j.Req.ID)
	// Its decode worker or its link (not this worker itself: it is up, or
	// it would not be sending, whatever the probe said last).
	id := f.h.d[j.D]
	if id == 0 {
		id = f.h.link[f.idx][j.D]
	}
	if id != 0 {
		f.drop(o, j, id, "fault: no path to decode worker", 0)
		return false
	}
	return true
}

// ---------------------------------------------------------------- router

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
	stats     map[int]*faultStats
	noPath    int64 // requests that found no healthy decode worker and waited
	events    []FaultEvent
	up        map[int]bool // faults whose end the router heard of
}

func (f *routerFaults) stat(id int) *faultStats {
	s := f.stats[id]
	if s == nil {
		s = &faultStats{detected: -1}
		f.stats[id] = s
	}
	return s
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
			f.stat(id)
			// A lost request or a failed transfer is evidence of the
			// fault: the router need not wait for the probe.
			if e := f.events[id]; !f.up[id] && e.Kind != topology.FaultSlow {
				n.learn(now, Health{Fault: id, Target: e.Target, Index: e.Index, Ds: e.Ds})
			}
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
		nj := &gpu.Job{Req: j.Req, P: -1, D: -1, Arrival: j.Arrival, Retries: j.Retries + 1,
			RetryReasons: append(slices.Clip(j.RetryReasons), j.Failed)}
		ds := n.dss.New(nj.Req)
		n.apply(now, nj, ds, n.pol.Begin(ds))
		return true
	case *Evicted:
		delete(f.believed[m.D], m.Session)
	}
	return false
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
	st := f.stat(m.Fault)
	if !m.Up && st.detected < 0 {
		st.detected = now
	}
	{
		if !m.Up && m.Target == KindDecode {
			// Forget what the dead worker held (sorted: deterministic).
			ss := make([]int32, 0, len(f.believed[m.Index]))
			for s := range f.believed[m.Index] {
				ss = append(ss, s)
			}
			slices.Sort(ss)
			for _, s := range ss {
				if n.fb != nil {
					n.fb.Evicted(m.Index, s)
				}
				f.reseed[s] = m.Fault
			}
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
func (n *routerNode) fix(now time.Duration, job *gpu.Job, ds *policy.Dispatch, st policy.Step) (policy.Step, bool) {
	f := n.f
	h := f.h
	for {
		switch st.Action {
		case policy.ActAdmit:
			if h.reachable(st.D) {
				return st, true
			}
			// Known down (or unreachable from every prefill worker): the
			// router does not ask it; to the policy that is a rejection.
			st = n.adm.Rejected(ds, st.D, "router: decode worker down")
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
				return st, false
			}
			d := h.nextReachable(st.D)
			if d < 0 {
				n.wait(job)
				return st, false
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
				return st, false
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
			f.stat(id).reseeded++
		}
	}
	return st, true
}

// wait: no decode worker is reachable; the request tries again after the
// detection delay (a retry: it spends the budget).
func (n *routerNode) wait(job *gpu.Job) {
	n.f.noPath++
	job.Failed = "fault: no healthy decode worker"
	n.send(n.self, Retry{job}, n.f.detect)
}

// ---------------------------------------------------------------- link

// linkFaults maps a failed transfer to the cut that failed it.
type linkFaults struct {
	cuts []FaultEvent // this NIC's cuts, in time order
}

func (f *linkFaults) blame(j *gpu.Job, at time.Duration) {
	for i := len(f.cuts) - 1; i >= 0; i-- {
		if f.cuts[i].At <= at {
			j.FaultHit = int32(f.cuts[i].ID + 1)
			return
		}
	}
}

// ---------------------------------------------------------------- records

// HasFaults reports whether the run may have faults (its Faults may be
// non-empty): its outputs then need each request's arrival and TTFT
// (metrics.Recover).
func (c *Cluster) HasFaults() bool { return c.faults != nil }

// Faults returns every fault of the run with what it did, for faults.csv
// and summary.json (read it after the run; Recovery is filled in by
// metrics.Recover).
func (c *Cluster) Faults() []metrics.FaultRecord {
	if c.faults == nil {
		return nil
	}
	var out []metrics.FaultRecord
	for _, e := range c.faults.events {
		r := metrics.FaultRecord{ID: e.ID, Kind: e.Kind, Target: string(e.Target), Node: e.Name, At: e.At, End: -1,
			Factor: e.Factor, Chaos: e.Chaos, Detected: -1, Recovery: -1}
		if e.End > 0 {
			r.End = e.End
		}
		for _, get := range c.faults.stats {
			if s := get(e.ID); s != nil {
				r.Lost += s.lost
				r.LostSessions += s.lostSessions
				r.Retried += s.retried
				r.Failed += s.failed
				r.Reseeded += s.reseeded
				if s.detected >= 0 {
					r.Detected = s.detected
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// clusterFaults is what Cluster keeps of the fault machinery.
type clusterFaults struct {
	events []FaultEvent
	stats  []func(id int) *faultStats
}

func statsOf(m map[int]*faultStats) func(int) *faultStats {
	return func(id int) *faultStats { return m[id] }
}

// wireFaults gives the nodes of a P/D cluster their fault state when the
// scenario has faults (else it changes nothing) and returns each NIC's
// link fault state (nil entries without faults).
func (c *Cluster) wireFaults(spec *topology.Spec, b *built, rtr *routerNode, decs []*decodeNode, pres []*prefillNode) []*linkFaults {
	links := make([]*linkFaults, len(b.nics))
	nicDs := make([][]int, len(b.nics))
	for ni, n := range b.nics {
		n.rateCap.each(func(d int, _ float64) { nicDs[ni] = append(nicDs[ni], d) })
	}
	events := buildSchedule(spec, b.topoNICs, nicDs)
	if len(events) == 0 {
		return links
	}
	rec := spec.Recovery
	if rec.DetectionDelay <= 0 {
		rec.DetectionDelay = topology.DefaultDetectionDelay
	}
	cf := &clusterFaults{events: events}
	c.faults = cf
	np, nd := len(pres), len(decs)
	c.driver.faults = &injector{events: events, detect: rec.DetectionDelay, decode: rtr.decode, prefill: rtr.prefill, router: c.driver.router}
	rtr.f = &routerFaults{h: newHealth(np, nd), detect: rec.DetectionDelay, budget: rec.RetryBudget, collector: c.driver.collector,
		believed: make([]map[int32]struct{}, nd), reseed: map[int32]int{}, stats: map[int]*faultStats{},
		events: events, up: map[int]bool{}}
	for d := range rtr.f.believed {
		rtr.f.believed[d] = map[int32]struct{}{}
	}
	cf.stats = append(cf.stats, statsOf(rtr.f.stats))
	for i, d := range decs {
		d.f = &decodeFaults{mk: b.mkDecode[i], slow: b.slowD[i], name: spec.Decode[i].Name, detect: rec.DetectionDelay,
			held: map[int64]*gpu.Job{}, resv: map[int64]int32{}, stats: map[int]*faultStats{}}
		cf.stats = append(cf.stats, statsOf(d.f.stats))
	}
	for i, p := range pres {
		p.f = &prefillFaults{mk: b.mkPrefill[i], slow: b.slowP[i], name: spec.Prefill[i].Name, detect: rec.DetectionDelay,
			h: newHealth(np, nd), idx: i, router: c.driver.router, decode: rtr.decode, held: map[int64]*gpu.Job{}, stats: map[int]*faultStats{}}
		cf.stats = append(cf.stats, statsOf(p.f.stats))
	}
	for ni := range b.nics {
		lf := &linkFaults{}
		for _, e := range events {
			if e.Target == KindLink && e.Name == b.nics[ni].name {
				lf.cuts = append(lf.cuts, e)
			}
		}
		links[ni] = lf
	}
	return links
}

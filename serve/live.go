package serve

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/topology"
)

// The cluster side of a served run: the node wrappers that feed a
// running cluster from a Bridge and report what its nodes did back to it.
// They run inside the runtime's actors (actors.Options.Wrap installs
// them; actors.Options.Started hands the Feeder its Injector), so
// reading the wrapped node's jobs and series is race-free.

// Injector delivers a message to a node of a running cluster from
// outside it (actors.Injector); false: the run stopped.
type Injector interface {
	Inject(to cluster.Addr, msg any) bool
}

// feedKick tells the Feeder's driver wrapper that the Bridge has requests
// waiting or closed.
type feedKick struct{}

// Feeder makes a cluster's run take its requests from a Bridge: the
// cluster is open-ended (cluster.Cluster.OpenEnded), and its driver node
// is wrapped so that on each kick it releases every request waiting in
// the Bridge (a Release per request, so the driver creates the Job and
// hands it to the router at the emulated time it is taken) and, once the
// Bridge is closed and drained, ends the input (cluster.EndOfInput): the
// run then ends when every request it released ended, by the runtime's
// own end-of-run checks.
type Feeder struct {
	br      *Bridge
	driver  cluster.Addr
	decodes []cluster.Addr // where an Abort goes: decode workers, or buckets
	node    *feedDriver
}

// Feed wraps cl's driver to take its requests from br (call before the
// run starts, e.g. from actors.Options.Wrap).
func Feed(cl *cluster.Cluster, br *Bridge) *Feeder {
	cl.OpenEnded()
	d := &feedDriver{Node: cl.Nodes[cl.Driver], br: br}
	cl.Nodes[cl.Driver] = d
	f := &Feeder{br: br, driver: cl.Driver, node: d}
	for i, k := range cl.Kinds {
		if k == cluster.KindDecode || k == cluster.KindBucket {
			f.decodes = append(f.decodes, cluster.Addr(i))
		}
	}
	return f
}

// Start connects the Bridge to the running cluster through in: each
// Submit and the Close kick the driver (kicks are coalesced: at most one
// is on its way; the driver takes every waiting request when it gets it),
// and a request whose client went away is aborted on every decode worker
// (cluster.Abort; wherever it is, it leaves the batch when it reaches
// one, and cluster.AbortDone follows its end); in a fused deployment
// every bucket gets it, and the instance holding the request aborts it.
func (f *Feeder) Start(in Injector) {
	if len(f.decodes) > 0 {
		each := func(msg func(id int64) any) func(int64) {
			return func(id int64) {
				for _, a := range f.decodes {
					in.Inject(a, msg(id))
				}
			}
		}
		f.br.SetAbort(each(func(id int64) any { return cluster.Abort{ID: id} }),
			each(func(id int64) any { return cluster.AbortDone{ID: id} }))
	}
	kick := func() {
		if f.node.pending.CompareAndSwap(false, true) {
			if !in.Inject(f.driver, feedKick{}) {
				f.node.pending.Store(false)
			}
		}
	}
	f.br.SetNotify(kick)
	kick()
}

// Stop disconnects the Bridge (the run stopped).
func (f *Feeder) Stop() {
	f.br.SetNotify(nil)
	f.br.SetAbort(nil, nil)
}

// feedDriver is the wrapped driver node.
type feedDriver struct {
	cluster.Node
	br      *Bridge
	closed  bool
	out     []cluster.Envelope
	pending atomic.Bool
}

func (d *feedDriver) Handle(now time.Duration, msg any) cluster.Ready {
	if _, ok := msg.(feedKick); !ok {
		return d.Node.Handle(now, msg)
	}
	d.out = d.out[:0]
	keep := func(rd cluster.Ready) { d.out = append(d.out, rd.Out...) }
	d.pending.Store(false)
	for {
		r, ok, drained := d.br.Take()
		if ok {
			keep(d.Node.Handle(now, cluster.Release{Req: r}))
			continue
		}
		if drained && !d.closed {
			d.closed = true
			keep(d.Node.Handle(now, cluster.EndOfInput{}))
		}
		break
	}
	return cluster.Ready{Out: d.out}
}

// watchedNode runs a node and then lets a watcher look at what happened,
// on the node's own goroutine.
type watchedNode struct {
	cluster.Node
	after func(now time.Duration, msg any, rd cluster.Ready)
}

func (w *watchedNode) Handle(now time.Duration, msg any) cluster.Ready {
	rd := w.Node.Handle(now, msg)
	w.after(now, msg, rd)
	return rd
}

// Watch wraps the nodes of cl that br needs to hear from (call before the
// run starts): the decode and bucket nodes report each job's first token
// as soon as it is set, the collector each ended job, and the workers'
// series, the router's counters and the links' bytes are published for
// /metrics. onEnd (may be nil) also sees each ended job, after br.
func Watch(spec *topology.Spec, cl *cluster.Cluster, br *Bridge, onEnd func(*gpu.Job, End)) {
	fused := len(spec.Buckets) > 0
	workerName := func(d int) string {
		switch {
		case d < 0:
			return ""
		case fused && d < len(spec.Fused):
			return spec.Fused[d].Name
		case !fused && d < len(spec.Decode):
			return spec.Decode[d].Name
		}
		return fmt.Sprint("worker-", d)
	}
	caps := map[string]int{}
	for _, w := range cl.Workers() {
		caps[w.Name] = w.CapKV
	}
	publish := func(now time.Duration, ss []*metrics.Series) {
		for _, s := range ss {
			p := s.At(now)
			br.SetWorker(WorkerState{Name: s.Worker, Role: s.Kind, Running: p.Running, Waiting: p.Queue, KVUsed: p.KV, KVCap: caps[s.Worker]})
		}
	}
	// Every worker is on /metrics from the start (idle until it works).
	publish(0, cl.Series)
	for i, n := range cl.Nodes {
		name := cl.Names[i]
		var mine []*metrics.Series
		for _, s := range cl.Series {
			if s.Worker == name || (cl.Kinds[i] == cluster.KindBucket && "bucket:"+s.Bucket == name) {
				mine = append(mine, s)
			}
		}
		switch cl.Kinds[i] {
		case cluster.KindDecode, cluster.KindBucket:
			ft := &firstTokens{br: br, name: workerName, jobs: map[int64]*gpu.Job{}}
			cl.Nodes[i] = &watchedNode{Node: n, after: func(now time.Duration, msg any, rd cluster.Ready) {
				ft.after(now, msg, rd)
				publish(now, mine)
			}}
		case cluster.KindPrefill:
			cl.Nodes[i] = &watchedNode{Node: n, after: func(now time.Duration, _ any, _ cluster.Ready) { publish(now, mine) }}
		case cluster.KindCollector:
			cl.Nodes[i] = &watchedNode{Node: n, after: func(now time.Duration, msg any, _ cluster.Ready) {
				m, ok := msg.(cluster.JobEnded)
				if !ok {
					return
				}
				j := m.Job
				e := End{ID: j.Req.ID, Worker: workerName(j.D), Mode: j.Mode.String(), CachedTokens: j.CachedTokens,
					Arrival: j.Arrival, FirstToken: j.FirstToken, Done: j.Done, Failed: j.Failed, Now: now,
					Fault: j.FaultHit > 0 || len(j.RetryReasons) > 0}
				e.Queue, e.PrefillTime = queueAndPrefill(j)
				if j.Mode.UsesPrefill() && j.P >= 0 && j.P < len(spec.Prefill) {
					e.Prefill = spec.Prefill[j.P].Name
				}
				if e.Failed != "" && e.Done < e.Arrival {
					e.Done = now
				}
				br.Ended(e)
				if onEnd != nil {
					onEnd(j, e)
				}
			}}
		case cluster.KindRouter:
			var last time.Time
			cl.Nodes[i] = &watchedNode{Node: n, after: func(time.Duration, any, cluster.Ready) {
				if time.Since(last) < 200*time.Millisecond {
					return
				}
				last = time.Now()
				var rs RouterState
				cl.Sessions(func(_ int32, st policy.SessionStats) {
					rs.Migrations += int64(st.Migrations)
					rs.Fallbacks += int64(st.Fallbacks)
					rs.Blacklists += int64(st.Blacklists)
					rs.Rejections += int64(st.Rejections)
				})
				// The sessions the router forgot (served runs): their
				// counters stay in the totals, which never go down.
				nf, f, _ := cl.ForgottenSessions()
				rs.SessionsForgotten = int64(nf)
				rs.Migrations += int64(f.Migrations)
				rs.Fallbacks += int64(f.Fallbacks)
				rs.Blacklists += int64(f.Blacklists)
				rs.Rejections += int64(f.Rejections)
				br.SetRouter(rs)
			}}
		case cluster.KindLink:
			lw := &linkWatch{br: br, name: name}
			cl.Nodes[i] = &watchedNode{Node: n, after: lw.after}
		}
	}
}

// queueAndPrefill splits a job's TTFT as vLLM's request metrics do: the
// time until its prefill started (on the prefill worker, or its
// append-prefill on the decode or fused worker) and from then to its
// first token. A request with no prefill start (its first token came
// with its KV) is all queue.
func queueAndPrefill(j *gpu.Job) (queue, prefill time.Duration) {
	if j.FirstToken <= 0 {
		return 0, 0
	}
	start := j.PrefillStart
	if start <= 0 || j.DPrefillStart > 0 && !j.Mode.UsesPrefill() {
		start = j.DPrefillStart
	}
	if start <= 0 || start < j.Arrival || start > j.FirstToken {
		return j.FirstToken - j.Arrival, 0
	}
	return start - j.Arrival, j.FirstToken - start
}

// firstTokens follows the jobs a decode or bucket node owns and reports
// each one's first token once the node set it.
type firstTokens struct {
	br   *Bridge
	name func(d int) string
	jobs map[int64]*gpu.Job
}

func (f *firstTokens) after(now time.Duration, msg any, rd cluster.Ready) {
	switch m := msg.(type) {
	case cluster.Admit:
		f.jobs[m.Job.Req.ID] = m.Job
	case cluster.KVReady:
		f.jobs[m.Job.Req.ID] = m.Job
	case cluster.RunJob:
		f.jobs[m.Job.Req.ID] = m.Job
	case cluster.Assign:
		f.jobs[m.Job.Req.ID] = m.Job
	}
	// Report before the jobs leave: a job that ends in this call has its
	// first token set already.
	for id, j := range f.jobs {
		if j.FirstToken > 0 {
			f.br.FirstToken(id, f.name(j.D), j.Arrival, j.FirstToken, now)
			delete(f.jobs, id)
		}
	}
	for _, e := range rd.Out {
		switch m := e.Msg.(type) {
		case cluster.AdmitReply:
			if m.Mode != policy.ModeDirect {
				// Rejected, or Seed/Reseed: the router owns the job again.
				delete(f.jobs, m.Job.Req.ID)
			}
		case cluster.JobEnded:
			delete(f.jobs, m.Job.Req.ID)
		case cluster.Retry:
			delete(f.jobs, m.Job.Req.ID)
		}
	}
}

// linkWatch counts a link's bytes and its busy fraction.
type linkWatch struct {
	br       *Bridge
	name     string
	bytes    int64
	inflight map[int64]bool
	busy     time.Duration // busy emulated time in the current window
	since    time.Duration // start of the current busy stretch
	window   time.Duration // start of the current window
	util     float64
}

func (l *linkWatch) after(now time.Duration, msg any, rd cluster.Ready) {
	if l.inflight == nil {
		l.inflight = map[int64]bool{}
	}
	wasBusy := len(l.inflight) > 0
	if m, ok := msg.(cluster.Transfer); ok {
		l.bytes += m.Job.TransferBytes
		l.inflight[m.Job.Req.ID] = true
	}
	for _, e := range rd.Out {
		if m, ok := e.Msg.(cluster.KVReady); ok {
			delete(l.inflight, m.Job.Req.ID)
		}
	}
	if wasBusy {
		l.busy += now - l.since
	}
	l.since = now
	// One-second windows (emulated): the utilisation of the last full one.
	if now-l.window >= time.Second {
		l.util = min(1, float64(l.busy)/float64(now-l.window))
		l.window, l.busy = now, 0
	}
	l.br.SetLink(LinkState{Name: l.name, Bytes: l.bytes, Utilisation: l.util})
}

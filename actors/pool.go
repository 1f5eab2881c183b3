package actors

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy/bucket"
	"github.com/pdemu/pdemu/transfer"
	"github.com/pdemu/pdemu/workload"
)

// Fused deployments (data-parallel and bucketed): a global router actor
// picks a bucket from read-only BucketView summaries that it gathers from
// the bucket actors (scatter-gather in emulated zero time), and the chosen
// bucket actor picks an instance with its own local router and meta-store.
// Each bucket actor owns its instances (fused worker cores) and nothing
// else: a bucket sees only its own instances' caches, meta-store and load.
// The single-pool form is one bucket covering every length.

type (
	viewReqMsg struct {
		job *gpu.Job
	}
	viewRespMsg struct {
		id   int64
		view bucket.BucketView
	}
	assignMsg struct {
		job *gpu.Job
		dec bucket.GlobalDecision
	}
	dispatchMsg struct {
		job  *gpu.Job
		inst int
	}
)

func bucketRequest(r *workload.Request) *bucket.Request {
	return &bucket.Request{ID: r.ID, Session: r.Session, InputLen: r.InputLen, OutputLen: r.OutputLen,
		Blocks: r.Blocks, BlockTokens: r.BlockTokens}
}

// ---------------------------------------------------------------- global router

type gather struct {
	job   *gpu.Job
	views []bucket.BucketView
	got   int
}

type globalRouterActor struct {
	node
	g         bucket.Global
	buckets   []*actor.PID
	configs   []bucket.BucketConfig
	collector *actor.PID
	pending   map[int64]*gather
}

func (a *globalRouterActor) handle(msg any) {
	switch m := msg.(type) {
	case newJobMsg:
		if len(a.buckets) == 1 {
			// One bucket: nothing to choose, no need to ask it for a view.
			c := a.configs[0]
			a.decide(m.job, []bucket.BucketView{{ID: 0, Name: c.Name, Min: c.Range.Min, Max: c.Range.Max, Instances: c.Instances}})
			return
		}
		a.pending[m.job.Req.ID] = &gather{job: m.job, views: make([]bucket.BucketView, len(a.buckets))}
		for _, b := range a.buckets {
			a.send(b, viewReqMsg{m.job}, 0)
		}
	case viewRespMsg:
		g := a.pending[m.id]
		g.views[m.view.ID] = m.view
		g.got++
		if g.got == len(a.buckets) {
			delete(a.pending, m.id)
			a.decide(g.job, g.views)
		}
	}
}

func (a *globalRouterActor) decide(job *gpu.Job, views []bucket.BucketView) {
	dec := a.g.Route(bucketRequest(job.Req), views, a.now())
	job.BucketPolicy = dec.Mode
	if dec.Bucket < 0 {
		job.Failed, job.Done, job.D = dec.Reason, a.now(), -1
		job.RouteLog = routeLog(job, dec, nil)
		a.send(a.collector, jobEndedMsg{job}, 0)
		return
	}
	a.send(a.buckets[dec.Bucket], assignMsg{job, dec}, 0)
}

// ---------------------------------------------------------------- bucket

type bucketActor struct {
	node
	id        int
	cfg       bucket.BucketConfig
	local     bucket.Local
	cores     []*gpu.FusedWorker
	global    []int // instance index -> global fused worker index
	rates     []float64
	router    *actor.PID
	collector *actor.PID
	series    []*metrics.Series
	wake      waker

	// Remote prefix fetches over the bucket's RDMA fabric (nil nic = off).
	nic      *transfer.NIC
	bytesTok int64
	fetches  map[uint64]fetch
	done     []transfer.Completion
}

// fetch is a prefix being copied from another instance of the bucket.
type fetch struct {
	job  *gpu.Job
	inst int
	upto int // leading blocks the instance will hold after the fetch
}

// submit hands job to instance inst, first fetching over the bucket's
// fabric the part of its prefix that another instance of this bucket holds
// and inst does not (never from another bucket).
func (a *bucketActor) submit(now time.Duration, job *gpu.Job, inst int) {
	if a.nic != nil {
		r := job.Req
		own := a.cores[inst].CachedPrefix(r.Blocks)
		best := own
		for j, c := range a.cores {
			if j != inst {
				best = max(best, c.CachedPrefix(r.Blocks))
			}
		}
		if best > own {
			bytes := int64(best-own) * int64(r.BlockTokens) * a.bytesTok
			job.TransferBytes, job.TransferStart = bytes, now
			a.fetches[uint64(r.ID)] = fetch{job: job, inst: inst, upto: best}
			a.nic.Start(now, uint64(r.ID), bytes, 0)
			return
		}
	}
	a.cores[inst].Submit(now, job)
}

// CachedPrefix implements bucket.Prober over the bucket's own instances.
func (a *bucketActor) CachedPrefix(i int, blocks []uint64) int {
	return a.cores[i].CachedPrefix(blocks)
}

func (a *bucketActor) view(r *workload.Request, now time.Duration) bucket.BucketView {
	v := bucket.BucketView{ID: a.id, Name: a.cfg.Name, Min: a.cfg.Range.Min, Max: a.cfg.Range.Max, Instances: len(a.cores)}
	var drain float64
	for i, c := range a.cores {
		q := c.Queued()
		v.QueueSum += q
		v.QueueMax = max(v.QueueMax, q)
		v.KVUsed += int64(c.Used())
		v.KVTotal += int64(c.Cap())
		v.Active += q + c.Running()
		if a.rates[i] > 0 {
			drain = max(drain, float64(c.QueuedPrefillTokens())/a.rates[i])
		}
	}
	v.DrainTime = time.Duration(drain * float64(time.Second))
	v.PredictedPrefix = a.local.PredictPrefix(bucketRequest(r), now)
	return v
}

func (a *bucketActor) instances() []bucket.InstanceView {
	out := make([]bucket.InstanceView, len(a.cores))
	for i, c := range a.cores {
		out[i] = bucket.InstanceView{Index: i, Queue: c.Queued(), Running: c.Running(),
			KVUsed: int64(c.Used()), KVTotal: int64(c.Cap()),
			QueuedPrefillTokens: c.QueuedPrefillTokens(), PrefillRate: a.rates[i]}
	}
	return out
}

func (a *bucketActor) handle(msg any) {
	now := a.now()
	// Only cores with an event due are advanced: an instance's state only
	// changes at its own events, and advancing it at other instants would
	// only split its analytic decode progress (at nanosecond rounding),
	// making one instance's timings depend on unrelated traffic.
	for _, c := range a.cores {
		if at, ok := c.NextEvent(); ok && at <= now {
			c.Advance(now)
		}
	}
	switch m := msg.(type) {
	case viewReqMsg:
		a.send(a.router, viewRespMsg{id: m.job.Req.ID, view: a.view(m.job.Req, now)}, 0)
	case assignMsg:
		job := m.job
		br := bucketRequest(job.Req)
		dec := a.local.Route(br, a.instances(), a, now)
		job.Bucket = a.cfg.Name
		job.LengthBucketMatch = m.dec.Bucket == m.dec.StrictBucket
		job.BucketPredictedPrefix = m.dec.Candidates[m.dec.Bucket].View.PredictedPrefix
		job.RouteLog = routeLog(job, m.dec, &dec)
		if dec.Instance < 0 {
			job.Failed, job.Done, job.D = "local router: "+dec.Reason, now, -1
			a.send(a.collector, jobEndedMsg{job}, 0)
			break
		}
		a.local.Routed(br, dec.Instance, now)
		job.D = a.global[dec.Instance]
		if dec.ProbeLatency > 0 {
			a.send(a.self, dispatchMsg{job, dec.Instance}, dec.ProbeLatency)
		} else {
			a.submit(now, job, dec.Instance)
		}
	case dispatchMsg:
		a.submit(now, m.job, m.inst)
	case wakeMsg:
		a.wake.fired(m)
	}
	next, has := time.Duration(0), false
	if a.nic != nil {
		a.done = a.nic.Advance(now, a.done[:0])
		for _, c := range a.done {
			f := a.fetches[c.ID]
			delete(a.fetches, c.ID)
			f.job.TransferEnd = c.At
			if c.Err == nil {
				r := f.job.Req
				a.cores[f.inst].Import(r.Blocks[:f.upto], r.BlockTokens)
			} // a failed fetch is recomputed instead
			a.cores[f.inst].Submit(now, f.job)
		}
		if len(a.fetches) > 0 {
			next, has = a.nic.NextEvent()
		}
	}
	for i, c := range a.cores {
		for _, ev := range c.Events() {
			switch ev.Kind {
			case gpu.EvDone, gpu.EvFailed:
				a.local.Finished(i, now)
				a.send(a.collector, jobEndedMsg{ev.Job}, 0)
			case gpu.EvBlocksEvicted:
				a.local.Evicted(i, ev.Blocks, now)
			}
		}
		a.series[i].Observe(now, c.Used(), c.Queued(), c.Running())
		if at, ok := c.NextEvent(); ok && (!has || at < next) {
			next, has = at, true
		}
	}
	a.wake.ensure(&a.node, next, has)
}

func (a *bucketActor) query(any) any {
	out := make([]workerReport, len(a.cores))
	for i, c := range a.cores {
		out[i] = workerReport{series: a.series[i], maxUsed: c.MaxUsed(), cap: c.Cap()}
	}
	return out
}

// routeLog renders one routing_log.jsonl line.
func routeLog(job *gpu.Job, g bucket.GlobalDecision, l *bucket.LocalDecision) []byte {
	type bucketCand struct {
		Bucket          string  `json:"bucket"`
		Score           float64 `json:"score"`
		Eligible        bool    `json:"eligible"`
		QueueSum        int     `json:"queue_sum"`
		QueueMax        int     `json:"queue_max"`
		KVUsed          int64   `json:"kv_used"`
		KVTotal         int64   `json:"kv_total"`
		Active          int     `json:"active"`
		PredictedPrefix int     `json:"predicted_prefix"`
		DrainMS         float64 `json:"drain_ms"`
	}
	type instCand struct {
		Instance        int     `json:"instance"`
		Score           float64 `json:"score"`
		PredictedPrefix int     `json:"predicted_prefix"`
		Probed          bool    `json:"probed,omitempty"`
		Queue           int     `json:"queue"`
		Running         int     `json:"running"`
		KVUsed          int64   `json:"kv_used"`
	}
	rec := struct {
		ID             int64        `json:"id"`
		InputTokens    int          `json:"input_tokens"`
		GlobalMode     string       `json:"global_mode"`
		LocalMode      string       `json:"local_mode"`
		ChosenBucket   string       `json:"chosen_bucket"`
		StrictBucket   string       `json:"strict_bucket"`
		ChosenInstance int          `json:"chosen_instance"`
		GlobalReason   string       `json:"global_reason"`
		LocalReason    string       `json:"local_reason"`
		ProbeMS        float64      `json:"probe_ms,omitempty"`
		Buckets        []bucketCand `json:"bucket_candidates"`
		Instances      []instCand   `json:"instance_candidates"`
	}{ID: job.Req.ID, InputTokens: job.Req.InputLen, GlobalMode: g.Mode, GlobalReason: g.Reason, ChosenInstance: -1,
		Buckets: []bucketCand{}, Instances: []instCand{}}
	for _, c := range g.Candidates {
		v := c.View
		rec.Buckets = append(rec.Buckets, bucketCand{v.Name, c.Score, c.Eligible, v.QueueSum, v.QueueMax, v.KVUsed, v.KVTotal,
			v.Active, v.PredictedPrefix, float64(v.DrainTime) / 1e6})
		if v.ID == g.Bucket {
			rec.ChosenBucket = v.Name
		}
		if v.ID == g.StrictBucket {
			rec.StrictBucket = v.Name
		}
	}
	if l != nil {
		rec.LocalMode, rec.LocalReason, rec.ChosenInstance = l.Mode, l.Reason, l.Instance
		rec.ProbeMS = float64(l.ProbeLatency) / 1e6
		for _, c := range l.Candidates {
			rec.Instances = append(rec.Instances, instCand{c.View.Index, c.Score, c.PredictedPrefix, c.Probed,
				c.View.Queue, c.View.Running, c.View.KVUsed})
		}
	}
	b, err := json.Marshal(rec)
	if err != nil { // cannot happen for these types; keep the line parseable
		return []byte(fmt.Sprintf(`{"id":%d,"error":%q}`, job.Req.ID, err.Error()))
	}
	return b
}

package cluster

import (
	"fmt"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy/bucket"
	"github.com/pdemu/pdemu/transfer"
	"github.com/pdemu/pdemu/workload"
)

// bucketNode is one bucket of a fused deployment: its instances (fused
// worker cores), its local router and meta-store, and nothing else: a
// bucket sees only its own instances' caches, meta-store and load. The
// single-pool form is one bucket covering every length.
type bucketNode struct {
	outbox
	id        int
	cfg       bucket.BucketConfig
	local     bucket.Local
	cores     []*gpu.FusedWorker
	global    []int // instance index -> global fused worker index
	rates     []float64
	router    Addr
	collector Addr
	series    []*metrics.Series

	// Remote prefix fetches over the bucket's RDMA fabric (nil nic = off).
	nic      *transfer.NIC
	bytesTok int64
	fetches  map[uint64]fetch
	rec      *metrics.LinkRecorder // links.csv (nil: not recorded)
	recID    metrics.LinkID        // the bucket's NIC in rec

	f *bucketFaults // nil: no faults
	// aborts are the Aborts of requests no instance held when they came
	// (still in the global router, a probe or a fetch), until AbortDone.
	aborts map[int64]bool
	// evictions are the instances' prefix-cache evictions (evictions.csv).
	evictions []metrics.EvictionRow
}

// fetch is a prefix being copied from another instance of the bucket.
type fetch struct {
	job   *gpu.Job
	inst  int
	upto  int   // leading blocks the instance will hold after the fetch
	epoch int32 // the instance's crash epoch when it started (faults only)
}

// submit hands job to instance inst, first fetching over the bucket's
// fabric the part of its prefix that another instance of this bucket holds
// and inst does not (never from another bucket).
func (n *bucketNode) submit(now time.Duration, job *gpu.Job, inst int) {
	if n.f != nil {
		if id := n.f.down[inst]; id != 0 {
			// Sent to a dead instance: lost, noticed after the detection delay.
			hit(&n.outbox, n.router, job, id, fmt.Sprintf("fault: fused %s down", n.series[inst].Worker), n.f.detect)
			return
		}
		n.f.submitted(job, inst)
	}
	if n.nic != nil {
		r := job.Req
		own := n.cores[inst].CachedPrefix(r.Blocks)
		best := own
		for j, c := range n.cores {
			if j != inst {
				best = max(best, c.CachedPrefix(r.Blocks))
			}
		}
		if best > own {
			bytes := int64(best-own) * int64(r.BlockTokens) * n.bytesTok
			job.TransferBytes, job.TransferStart = bytes, now
			// A crash may have left this request's earlier fetch on the
			// fabric (its job was retried): a fresh transfer id then.
			id := uint64(r.ID)
			for _, busy := n.fetches[id]; busy; _, busy = n.fetches[id] {
				id += 1 << 40
			}
			fe := fetch{job: job, inst: inst, upto: best}
			if n.f != nil {
				fe.epoch = n.f.epoch[inst]
			}
			n.fetches[id] = fe
			n.nic.Start(now, id, bytes, 0)
			return
		}
	}
	n.cores[inst].Submit(now, job)
}

// CachedPrefix implements bucket.Prober over the bucket's own instances.
func (n *bucketNode) CachedPrefix(i int, blocks []uint64) int {
	return n.cores[i].CachedPrefix(blocks)
}

func (n *bucketNode) view(r *workload.Request, now time.Duration) bucket.BucketView {
	v := bucket.BucketView{ID: n.id, Name: n.cfg.Name, Min: n.cfg.Range.Min, Max: n.cfg.Range.Max, Instances: len(n.cores)}
	var drain float64
	for i, c := range n.cores {
		q := c.Queued()
		v.QueueSum += q
		v.QueueMax = max(v.QueueMax, q)
		v.KVUsed += int64(c.Used())
		v.KVTotal += int64(c.Cap())
		v.Active += q + c.Running()
		if n.rates[i] > 0 {
			drain = max(drain, float64(c.QueuedPrefillTokens())/n.rates[i])
		}
	}
	v.DrainTime = time.Duration(drain * float64(time.Second))
	v.PredictedPrefix = n.local.PredictPrefix(r, now)
	return v
}

func (n *bucketNode) instances() []bucket.InstanceView {
	out := make([]bucket.InstanceView, len(n.cores))
	for i, c := range n.cores {
		out[i] = bucket.InstanceView{Index: i, Queue: c.Queued(), Running: c.Running(),
			KVUsed: int64(c.Used()), KVTotal: int64(c.Cap()),
			QueuedPrefillTokens: c.QueuedPrefillTokens(), PrefillRate: n.rates[i]}
	}
	return out
}

func (n *bucketNode) Handle(now time.Duration, msg any) Ready {
	if n.f != nil {
		if rd, ok := n.faultHandle(now, msg); ok {
			return rd
		}
	}
	// Only cores with an event due are advanced: an instance's state only
	// changes at its own events, and advancing it at other instants would
	// only split its analytic decode progress (at nanosecond rounding),
	// making one instance's timings depend on unrelated traffic.
	for _, c := range n.cores {
		if at, ok := c.NextEvent(); ok && at <= now {
			c.Advance(now)
		}
	}
	switch m := msg.(type) {
	case ViewReq:
		n.send(n.router, ViewResp{ID: m.Job.Req.ID, View: n.view(m.Job.Req, now)}, 0)
	case Assign:
		job := m.Job
		br := job.Req
		views := n.instances()
		dec := n.local.Route(br, views, n, now)
		if n.f != nil && dec.Instance >= 0 {
			inst := n.f.pick(dec.Instance, views)
			if inst < 0 {
				job.Bucket = n.cfg.Name
				hit(&n.outbox, n.router, job, n.f.known[dec.Instance], "fault: no live instance in bucket "+n.cfg.Name, n.f.detect)
				break
			}
			dec.Instance = inst
		}
		job.Bucket = n.cfg.Name
		job.LengthBucketMatch = m.Dec.Bucket == m.Dec.StrictBucket
		job.BucketPredictedPrefix = m.Dec.Candidates[m.Dec.Bucket].View.PredictedPrefix
		job.RouteLog = routeLog(job, m.Dec, &dec)
		if dec.Instance < 0 {
			job.Failed, job.Done, job.D = "local router: "+dec.Reason, now, -1
			n.send(n.collector, JobEnded{job}, 0)
			break
		}
		n.local.Routed(br, dec.Instance, now)
		job.D = n.global[dec.Instance]
		if dec.ProbeLatency > 0 {
			n.send(n.self, Submit{job, dec.Instance}, dec.ProbeLatency)
		} else {
			n.submit(now, job, dec.Instance)
		}
	case Submit:
		n.submit(now, m.Job, m.Inst)
	case Abort:
		if n.aborts == nil {
			n.aborts = map[int64]bool{}
		}
		n.aborts[m.ID] = true
	case AbortDone:
		delete(n.aborts, m.ID)
	}
	next, has := time.Duration(0), false
	if n.nic != nil {
		n.nic.Advance(now)
		rd := n.nic.Ready()
		for _, c := range rd.Out {
			f := n.fetches[c.ID]
			delete(n.fetches, c.ID)
			if n.f != nil && (f.job == nil || n.f.held[f.inst][f.job.Req.ID] != f.job || n.f.epoch[f.inst] != f.epoch) {
				continue // the instance crashed meanwhile: the job was retried
			}
			f.job.TransferEnd = c.At
			if c.Err == nil {
				r := f.job.Req
				n.cores[f.inst].Import(r.Blocks[:f.upto], r.BlockTokens)
			} // a failed fetch is recomputed instead
			n.cores[f.inst].Submit(now, f.job)
		}
		if len(n.fetches) > 0 {
			next, has = rd.Wake, rd.HasWake
		}
		if n.rec != nil {
			b, r := n.nic.Load(now)
			n.rec.Link(now, n.recID, b, r, n.nic.Active())
		}
	}
	// A request whose client went away leaves the instance that holds it
	// (now or once it arrives there).
	for id := range n.aborts {
		for _, c := range n.cores {
			if c.Abort(now, id) {
				delete(n.aborts, id)
				break
			}
		}
	}
	for i, c := range n.cores {
		rd := c.Ready()
		for _, ev := range rd.Out {
			switch ev.Kind {
			case gpu.EvDone, gpu.EvFailed:
				if n.f != nil {
					delete(n.f.held[i], ev.Job.Req.ID)
				}
				n.local.Finished(i, now)
				n.send(n.collector, JobEnded{ev.Job}, 0)
			case gpu.EvBlocksEvicted:
				n.local.Evicted(i, ev.Blocks, now)
				n.evictions = append(n.evictions, metrics.EvictionRow{At: now, Worker: n.series[i].Worker,
					Tokens: ev.Tokens, Cause: ev.Cause.String(), For: -1}) // kvcause.go
			}
		}
		n.series[i].Observe(now, c.Used(), c.Queued(), c.Running())
		if rd.HasWake && (!has || rd.Wake < next) {
			next, has = rd.Wake, true
		}
	}
	return n.ready(next, has)
}

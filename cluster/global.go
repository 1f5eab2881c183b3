package cluster

import (
	"fmt"
	"slices"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy/bucket"
)

// Fused deployments (data-parallel and bucketed): a global router actor
// picks a bucket from read-only BucketView summaries that it gathers from
// the bucket actors (scatter-gather in emulated zero time), and the chosen
// bucket actor picks an instance with its own local router and meta-store.
// Each bucket actor owns its instances (fused worker cores) and nothing
// else: a bucket sees only its own instances' caches, meta-store and load.
// The single-pool form is one bucket covering every length.

// gather collects the bucket views for one request.
type gather struct {
	job   *gpu.Job
	views []bucket.BucketView
	got   int
}

// globalNode is the global router of a fused deployment: it picks a bucket
// from read-only BucketView summaries that it gathers from the buckets
// (scatter-gather in emulated zero time).
type globalNode struct {
	outbox
	g         bucket.Global
	buckets   []Addr
	configs   []bucket.BucketConfig
	collector Addr
	pending   map[int64]*gather
	f         *globalFaults // nil: no faults
	ctx       int           // Limits.Context: longer requests fail with gpu.ReasonExceedsContext
}

func (n *globalNode) newJob(now time.Duration, job *gpu.Job) {
	if len(n.buckets) == 1 {
		// One bucket: nothing to choose, no need to ask it for a view.
		c := n.configs[0]
		n.decide(now, job, []bucket.BucketView{{ID: 0, Name: c.Name, Min: c.Range.Min, Max: c.Range.Max, Instances: c.Instances}})
		return
	}
	n.pending[job.Req.ID] = &gather{job: job, views: make([]bucket.BucketView, len(n.buckets))}
	for _, b := range n.buckets {
		n.send(b, ViewReq{job}, 0)
	}
}

func (n *globalNode) Handle(now time.Duration, msg any) Ready {
	if n.f != nil && n.faultHandle(now, msg) || failTooLong(&n.outbox, n.collector, n.ctx, msg, now) {
		return n.ready(0, false)
	}
	switch m := msg.(type) {
	case NewJob:
		n.newJob(now, m.Job)
	case ViewResp:
		g := n.pending[m.ID]
		g.views[m.View.ID] = m.View
		g.got++
		if g.got == len(n.buckets) {
			delete(n.pending, m.ID)
			n.decide(now, g.job, g.views)
		}
	}
	return n.ready(0, false)
}

func (n *globalNode) decide(now time.Duration, job *gpu.Job, views []bucket.BucketView) {
	dec := n.g.Route(job.Req, views, now)
	job.BucketPolicy = dec.Mode
	if dec.Bucket < 0 {
		job.Failed, job.Done, job.D = dec.Reason, now, -1
		job.RouteLog = routeLog(job, dec, nil)
		n.send(n.collector, JobEnded{job}, 0)
		return
	}
	if n.f != nil && n.f.down[dec.Bucket] != 0 {
		// Known down: the request waits (a retry) instead.
		id := n.f.down[dec.Bucket]
		job.Failed, job.FaultHit = "fault: bucket down ("+n.f.events[id-1].Name+" crashed)", id
		n.send(n.self, Retry{Job: job}, n.f.detect)
		return
	}
	n.send(n.buckets[dec.Bucket], Assign{job, dec}, 0)
}

// globalFaults is the global router's fault state.
type globalFaults struct {
	down      []int32 // per bucket, as known
	budget    int
	detect    time.Duration
	collector Addr
	events    []FaultEvent
	stats     faultStatsByID
}

func (n *globalNode) faultHandle(now time.Duration, msg any) bool {
	f := n.f
	switch m := msg.(type) {
	case Health:
		e := f.events[m.Fault]
		if m.Up {
			f.down[e.Index] = 0
			return true
		}
		f.down[e.Index] = int32(m.Fault + 1)
		st := f.stats.get(m.Fault) // a Retry may have made it first, undetected
		if st.detected < 0 {
			st.detected = now
		}
		return true
	case Retry:
		j := m.Job
		id := int(j.FaultHit) - 1
		var st *faultStats
		if id >= 0 {
			st = f.stats.get(id)
		}
		if j.Retries >= f.budget {
			if f.budget > 0 {
				j.Failed = fmt.Sprintf("%s (retry budget %d spent)", j.Failed, f.budget)
			}
			if len(j.RetryReasons) > 0 {
				j.Failed = "attempts: " + joinReasons(j.RetryReasons) + "; last: " + j.Failed
			}
			j.Done, j.D = now, -1
			if st != nil {
				st.failed++
			}
			n.send(f.collector, JobEnded{j}, 0)
			return true
		}
		if st != nil {
			st.retried++
		}
		nj := &gpu.Job{Req: j.Req, P: -1, D: -1, Arrival: j.Arrival, Released: j.Released, Retries: j.Retries + 1,
			RetryReasons: append(slices.Clip(j.RetryReasons), j.Failed)}
		n.newJob(now, nj)
		return true
	}
	return false
}

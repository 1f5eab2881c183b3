package cluster

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/internal/minheap"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
)

// Residency loss (issue 19): every eviction of a session's KV on a decode
// worker is an evictions.csv row, and every Seed, Reseed and Fallback names
// why it had no resident KV to use (gpu.Job.KVCause, per_request.csv's
// kv_cause). The decode node records the rows; the router, which sees
// every placement and every eviction notice, names the causes.

// KV causes (per_request.csv kv_cause; docs/OUTPUTS.md). A loss cause is
// "<loss>@<seconds>s" with the loss's details, "-on-<worker>" when it
// happened on another worker than the one the request now goes to.
const (
	CauseFirstTurn     = "first-turn"     // Seed: the session's first turn
	CauseNeverResident = "never-resident" // Reseed: no earlier turn left KV anywhere (all were Fallbacks or failed)
	CauseRejected      = "rejected:"      // + the admission rejections of this dispatch, each distinct one once with (xN), joined by '+'
	CauseBlacklisted   = "blacklisted"    // the session's decode worker (or every one) blacklists it
	CauseRerouted      = "rerouted"       // Route chose another worker than the one holding the session's KV
)

// kvTrack is what the router knows of one session's residency.
type kvTrack struct {
	d       int32 // decode worker the session was last placed on; -1: none
	lossD   int32 // worker whose copy was lost since that placement; -1: none
	lossAt  time.Duration
	lossWhy gpu.EvictCause
	lossFor int64
}

// kvCauses names the KV cause of the router's Seed/Reseed/Fallback steps.
type kvCauses struct {
	s     []kvTrack // by session index
	names []string  // decode worker names
	// sparse, when set, holds the tracks instead of s (a router that
	// forgets sessions: forget.go).
	sparse map[int32]*kvTrack
	intern metrics.Interner // the rejected: causes
}

func (c *kvCauses) track(s int32) *kvTrack {
	if c.sparse != nil {
		t := c.sparse[s]
		if t == nil {
			t = &kvTrack{d: -1, lossD: -1}
			c.sparse[s] = t
		}
		return t
	}
	for int(s) >= len(c.s) {
		c.s = append(c.s, kvTrack{d: -1, lossD: -1})
	}
	return &c.s[s]
}

// placed records that session s's KV is (to be) resident on d.
func (c *kvCauses) placed(s int32, d int) {
	t := c.track(s)
	t.d, t.lossD = int32(d), -1
}

// lost records that d dropped session s's KV at at.
func (c *kvCauses) lost(s int32, d int, at time.Duration, why gpu.EvictCause, forReq int64) {
	if c.sparse != nil && c.sparse[s] == nil {
		return // a forgotten session's KV, evicted since: no track to revive
	}
	t := c.track(s)
	if t.d != int32(d) {
		return // a stale copy: not the one the session would use
	}
	t.lossD, t.lossAt, t.lossWhy, t.lossFor = int32(d), at, why, forReq
}

// crashed records that decode worker d lost every session placed on it.
func (c *kvCauses) crashed(d int, at time.Duration) {
	for _, t := range c.sparse {
		if t.d == int32(d) && t.lossD < 0 {
			t.lossD, t.lossAt, t.lossWhy, t.lossFor = int32(d), at, gpu.EvictCrash, -1
		}
	}
	for s := range c.s {
		if t := &c.s[s]; t.d == int32(d) && t.lossD < 0 {
			t.lossD, t.lossAt, t.lossWhy, t.lossFor = int32(d), at, gpu.EvictCrash, -1
		}
	}
}

// forget drops session s's track (the router forgot the session).
func (c *kvCauses) forget(s int32) { delete(c.sparse, s) }

// blacklister is implemented by policies with a blacklist (KVC).
type blacklister interface {
	Blacklisted(s int32, d int) bool
}

// cause names the KV cause of step st for job (a Seed, Reseed or
// Fallback), before the step's placement is recorded.
func (c *kvCauses) cause(pol RouterPolicy, job *gpu.Job, ds *policy.Dispatch, st policy.Step) string {
	s := job.Req.Session
	t := c.track(s)
	bl, _ := pol.(blacklister)
	switch st.Mode {
	case policy.ModeSeed:
		return CauseFirstTurn
	case policy.ModeFallback:
		if len(ds.Reasons) > 0 {
			return c.rejected(ds.Reasons)
		}
		if bl != nil {
			return CauseBlacklisted
		}
		return ""
	case policy.ModeReseed:
		if t.lossD >= 0 {
			return c.lossName(t, st.D)
		}
		if t.d < 0 {
			return CauseNeverResident
		}
		if int(t.d) != st.D {
			if len(ds.Reasons) > 0 {
				return c.rejected(ds.Reasons)
			}
			if bl != nil && bl.Blacklisted(s, int(t.d)) {
				return CauseBlacklisted
			}
			return CauseRerouted
		}
	}
	return "" // not explained: the cause test fails on it
}

// rejected is CauseRejected followed by reasons compacted with '+',
// interned (a run's few distinct lists cost one string each).
func (c *kvCauses) rejected(reasons []string) string {
	var buf [256]byte
	return c.intern.Bytes(metrics.AppendCompactReasons(append(buf[:0], CauseRejected...), "+", reasons))
}

func (c *kvCauses) lossName(t *kvTrack, d int) string {
	var buf [64]byte // on the stack: the string is the one allocation
	b := append(buf[:0], t.lossWhy.String()...)
	b = append(b, '@')
	b = strconv.AppendFloat(b, t.lossAt.Seconds(), 'f', 3, 64)
	b = append(b, 's')
	switch t.lossWhy {
	case gpu.EvictCapacity:
		b = append(b, "-for-r"...)
		b = strconv.AppendInt(b, t.lossFor, 10)
	case gpu.EvictTransferFailed:
		b = append(b, "-r"...)
		b = strconv.AppendInt(b, t.lossFor, 10)
	}
	if int(t.lossD) != d && int(t.lossD) < len(c.names) {
		b = append(b, "-on-"...)
		b = append(b, c.names[t.lossD]...)
	}
	return string(b)
}

// step records the KV cause and placement of the router's step st for
// job (after the fault layer fixed it).
func (n *routerNode) kvStep(job *gpu.Job, ds *policy.Dispatch, st policy.Step) {
	s := job.Req.Session
	switch st.Action {
	case policy.ActNone, policy.ActRun:
		n.kv.placed(s, st.D)
	case policy.ActPrefill:
		switch st.Mode {
		case policy.ModeSeed, policy.ModeReseed:
			job.KVCause = n.kv.cause(n.pol, job, ds, st)
			n.kv.placed(s, st.D)
		case policy.ModeFallback:
			job.KVCause = n.kv.cause(n.pol, job, ds, st)
		}
	}
}

// recordEviction keeps ev (an EvEvicted of this worker) as an
// evictions.csv row and tells the router.
func (n *decodeNode) recordEviction(ev gpu.Event) {
	n.keepEviction(metrics.EvictionRow{At: ev.At, Session: ev.Name, Tokens: ev.Tokens,
		Cause: ev.Cause.String(), For: ev.For})
	if len(n.evMsgs) == 0 {
		n.evMsgs = make([]Evicted, evictedSlab)
	}
	m := &n.evMsgs[0]
	n.evMsgs = n.evMsgs[1:]
	*m = Evicted{D: n.idx, Session: ev.Session, At: ev.At, Cause: ev.Cause, For: ev.For}
	n.send(n.router, m, 0)
}

// evictedSlab is how many *Evicted messages a decode node allocates at
// once: one allocation per evictedSlab evictions instead of one each. A
// slab (2.5 KB) stays in memory while any of its messages is referenced;
// the router reads them and keeps none.
const evictedSlab = 64

// recordCrash keeps a worker-crashed row for every session the worker held
// when it crashed at now (the router learns of it from its fault view).
func (n *decodeNode) recordCrash(now time.Duration) {
	for _, r := range n.w.Residents() {
		n.keepEviction(metrics.EvictionRow{At: now, Session: r.Name, Tokens: r.Tokens,
			Cause: gpu.EvictCrash.String(), For: -1})
	}
}

// keepEviction keeps row for evictions.csv, or hands it to the
// evictions sink (StreamEvictions; an error fails the run).
func (n *decodeNode) keepEviction(row metrics.EvictionRow) {
	if n.evSink == nil {
		if n.evictions == nil {
			n.evictions = &evictLog{}
		}
		n.evictions.add(row)
		return
	}
	row.Worker = n.evName
	if err := n.evSink(row); err != nil {
		n.send(RunAddr, Failed{err}, 0)
	}
}

// StreamEvictions makes the decode workers hand each evictions.csv row
// to sink as it happens (from their own goroutines: sink must be safe for
// concurrent use) instead of keeping it for the run: a server's memory
// then does not grow with its evictions. The rows come in each worker's
// time order; Evictions then returns none of theirs. Call it before the
// run starts and before any node is wrapped.
func (c *Cluster) StreamEvictions(sink func(metrics.EvictionRow) error) {
	for i, n := range c.Nodes {
		if dn, ok := n.(*decodeNode); ok {
			dn.evSink, dn.evName = sink, c.Names[i]
		}
	}
}

// Evictions returns every decode worker's evictions.csv rows, and the
// fused workers' prefix-cache evictions, after the run, in time order
// (ties: node order, then the order they happened). The rows move from
// the nodes (the decode nodes' compact logs, evictlog.go) into one slice
// of exactly their number, read from the logs as they are merged (a run's
// end holds each row once as a struct, not twice); later calls return the
// same slice.
func (c *Cluster) Evictions() []metrics.EvictionRow {
	if c.evMerged {
		return c.evicted
	}
	// Each node's rows, with the worker name decode rows take.
	var runs []evRun
	n := 0
	for i, nd := range c.Nodes {
		switch dn := nd.(type) {
		case *decodeNode:
			runs = append(runs, evRun{log: dn.evictions, name: c.Names[i], named: true})
			n += dn.evictions.len()
			dn.evictions = nil
		case *bucketNode:
			runs = append(runs, evRun{rows: dn.evictions})
			n += len(dn.evictions)
			dn.evictions = nil
		}
	}
	c.evicted, c.evMerged = mergeByTime(runs, n), true
	return c.evicted
}

// evRun is one node's eviction rows, a slice (rows) or a decode node's
// log (log, when not nil); named: they take name as Worker.
type evRun struct {
	rows  []metrics.EvictionRow
	log   *evictLog
	name  string
	named bool
	idx   int // the run's place among the runs (ties: the earlier first)

	cur  evictCursor // log's, from start
	head metrics.EvictionRow
	left int // rows not taken yet (head is the next when left > 0)
}

// start readies r for peek and take.
func (r *evRun) start() {
	if r.log == nil {
		r.left = len(r.rows)
		if r.left > 0 {
			r.head = r.rows[0]
		}
		return
	}
	r.cur, r.left = r.log.cursor(), r.log.len()
	r.head, _ = r.cur.next()
}

// sorted reports whether r's rows are in time order.
func (r *evRun) sorted() bool {
	if r.log != nil {
		return !r.log.unsorted
	}
	return slices.IsSortedFunc(r.rows, func(a, b metrics.EvictionRow) int { return cmp.Compare(a.At, b.At) })
}

// take returns r's next row (left > 0), named, and moves on.
func (r *evRun) take() metrics.EvictionRow {
	row := r.head
	if r.named {
		row.Worker = r.name
	}
	r.left--
	switch {
	case r.left == 0:
		r.rows, r.log = nil, nil
	case r.log != nil:
		r.head, _ = r.cur.next()
	default:
		r.rows = r.rows[1:]
		r.head = r.rows[0]
	}
	return row
}

// mergeByTime returns the n rows of runs in one exactly-sized slice,
// ordered by time stably (rows of equal time in run order, then row
// order): what slices.SortStableFunc by At of their concatenation gives.
// Each node's rows are usually in time order already: they are then
// merged through a heap of the runs' heads (O(n log k), no swaps of rows
// and no second copy); otherwise concatenated and sorted.
func mergeByTime(runs []evRun, n int) []metrics.EvictionRow {
	out := make([]metrics.EvictionRow, 0, n)
	sorted := true
	for i := range runs {
		runs[i].idx = i
		runs[i].start()
		sorted = sorted && runs[i].sorted()
	}
	if !sorted {
		for i := range runs {
			for runs[i].left > 0 {
				out = append(out, runs[i].take())
			}
		}
		slices.SortStableFunc(out, func(a, b metrics.EvictionRow) int { return cmp.Compare(a.At, b.At) })
		return out
	}
	live := make([]*evRun, 0, len(runs))
	for i := range runs {
		if runs[i].left > 0 {
			live = append(live, &runs[i])
		}
	}
	h := minheap.New(func(a, b **evRun) bool {
		x, y := *a, *b
		if x.head.At != y.head.At {
			return x.head.At < y.head.At
		}
		return x.idx < y.idx
	})
	h.Init(live)
	for h.Len() > 0 {
		r := *h.Min()
		out = append(out, r.take())
		if r.left == 0 {
			h.Pop()
		} else {
			h.Fix(0)
		}
	}
	return out
}

package cluster

import (
	"fmt"

	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// Cluster is a scenario's nodes, wired by address, ready to run: a
// runtime delivers Start to Driver and then every Envelope the nodes
// return, through a Host per node.
type Cluster struct {
	// Nodes, Names and Kinds are indexed by Addr. A runtime gives node i
	// the sender id i+1 for deterministic ordering (0 sends Start).
	Nodes  []Node
	Names  []string
	Kinds  []Kind
	Driver Addr
	// Series are the workers' time series, in output order.
	Series []*metrics.Series

	driver    *driverNode
	collector *collectorNode
	router    *routerNode // nil in fused deployments
	workers   func() []metrics.WorkerSummary
	faults    *clusterFaults // nil: no faults
	links     *metrics.LinkRecorder
	routerEv  *metrics.RouterRecorder
	evicted   []metrics.EvictionRow // Evictions' merged rows (kvcause.go)
	evMerged  bool
}

// Build builds the cluster of spec around the workload src. Nothing runs
// until a runtime delivers Start.
func Build(spec *topology.Spec, src workload.Source) (*Cluster, error) {
	c := &Cluster{links: metrics.NewLinkRecorder(), routerEv: metrics.NewRouterRecorder()}
	c.driver = &driverNode{drv: workload.NewDriver(src, spec.Workload.Loop != topology.LoopOpen)}
	c.collector = &collectorNode{}
	c.Driver = c.add(c.driver, "driver", KindDriver)
	c.driver.collector = c.add(c.collector, "collector", KindCollector)
	c.collector.driver = c.Driver
	if len(spec.Buckets) > 0 {
		pb, err := buildPool(spec)
		if err != nil {
			return nil, err
		}
		c.collector.col = metrics.NewCollector(nil, names(spec.Fused))
		c.addPool(spec, pb)
		return c, c.enforceLimits(spec)
	}
	b, err := buildPD(spec)
	if err != nil {
		return nil, err
	}
	if err := b.checkLinks(spec); err != nil {
		return nil, err
	}
	c.collector.col = metrics.NewCollector(names(spec.Prefill), names(spec.Decode))
	c.addPD(spec, b)
	return c, c.enforceLimits(spec)
}

// add appends a node and returns its address.
func (c *Cluster) add(n Node, name string, k Kind) Addr {
	a := Addr(len(c.Nodes))
	c.Nodes, c.Names, c.Kinds = append(c.Nodes, n), append(c.Names, name), append(c.Kinds, k)
	n.(interface{ bind(Addr) }).bind(a)
	return a
}

// Collector is the run's records (read it after the run).
func (c *Cluster) Collector() *metrics.Collector { return c.collector.col }

// Read is the number of requests the driver read from the source (for an
// open-ended run: the requests it released).
func (c *Cluster) Read() int {
	if c.driver.external {
		return c.driver.released
	}
	return c.driver.drv.Read()
}

// OpenEnded makes the run's input open-ended (a server's): besides its
// workload source, the driver takes Release messages from outside the
// cluster (the runtime's injection), each released at the emulated time
// it is handled; the workload is not done, and the fault schedule keeps
// running, until the driver handles EndOfInput. Read then counts the
// requests released. Call it before the run starts.
func (c *Cluster) OpenEnded() { c.driver.external, c.driver.open = true, true }

// Workers summarises every worker after the run (Requests not counted).
func (c *Cluster) Workers() []metrics.WorkerSummary { return c.workers() }

// Sessions calls f with the router's counters of each session it keeps
// (in no particular order) and reports whether the policy keeps any:
// false, and no call, when it keeps none. Call it after the run, or from
// the router's goroutine.
func (c *Cluster) Sessions(f func(s int32, st policy.SessionStats)) bool {
	if c.router == nil {
		return false
	}
	return c.router.sessions(f)
}

func names(ws []topology.Worker) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Name
	}
	return out
}

// checkLinks: every prefill worker needs a link to every decode worker
// (topology validates this; a hand-built Spec may not).
func (b *built) checkLinks(spec *topology.Spec) error {
	nd := len(b.decode)
	linked := make([]bool, len(b.prefill)*nd)
	for _, n := range b.nics {
		n.rateCap.each(func(d int, _ float64) { linked[n.prefill*nd+d] = true })
	}
	for i, ok := range linked {
		if !ok {
			return fmt.Errorf("no link from %s to %s", spec.Prefill[i/nd].Name, spec.Decode[i%nd].Name)
		}
	}
	return nil
}

// addPD adds a disaggregated cluster: router, decode and prefill workers,
// one link per prefill NIC.
func (c *Cluster) addPD(spec *topology.Spec, b *built) {
	rtr := NewRouter(b.pol, nil, nil).(*routerNode)
	rtr.kv.names = names(spec.Decode)
	c.router = rtr
	rtr.Observe(c.routerEv, spec.Router.RoutingLog, spec.Router.LogCandidates, spec.Router.Policy, names(spec.Prefill), names(spec.Decode))
	rAddr := c.add(rtr, "router", KindRouter)
	rtr.collector = c.driver.collector
	c.driver.router = rAddr
	decs := make([]*decodeNode, len(b.decode))
	for i, w := range b.decode {
		s := metrics.NewSeries(spec.Decode[i].Name, "decode")
		c.Series = append(c.Series, s)
		decs[i] = &decodeNode{idx: i, w: w, series: s, router: rAddr, collector: c.driver.collector}
		rtr.fit = max(rtr.fit, w.Cap())
		rtr.decode = append(rtr.decode, c.add(decs[i], spec.Decode[i].Name, KindDecode))
	}
	pres := make([]*prefillNode, len(b.prefill))
	for i, w := range b.prefill {
		s := metrics.NewSeries(spec.Prefill[i].Name, "prefill")
		c.Series = append(c.Series, s)
		pres[i] = &prefillNode{w: w, series: s, links: make([]Addr, len(b.decode))}
		rtr.prefill = append(rtr.prefill, c.add(pres[i], spec.Prefill[i].Name, KindPrefill))
	}
	linkFaults := c.wireFaults(spec, b, rtr, decs, pres)
	var links []*linkNode
	var linkPrefill []int
	for ni, n := range b.nics {
		ln := &linkNode{nic: n.nic, bytesPerToken: n.bytesTok, rateCap: n.rateCap, decode: rtr.decode,
			name: n.name, rec: c.links, recID: c.links.NIC(n.name, n.nic.Config().LineRate), f: linkFaults[ni]}
		links, linkPrefill = append(links, ln), append(linkPrefill, n.prefill)
		a := c.add(ln, "link:"+n.name, KindLink)
		n.rateCap.each(func(d int, _ float64) { pres[n.prefill].links[d] = a })
	}
	if spec.Router.DPSync { // D→P incremental KV sync (dpsync.go)
		wireSync(decs, rtr.prefill, links, linkPrefill)
	}
	c.workers = func() []metrics.WorkerSummary {
		var out []metrics.WorkerSummary
		for i, d := range decs {
			out = append(out, metrics.WorkerSummary{Name: spec.Decode[i].Name, Kind: "decode", MaxKV: d.w.MaxUsed(), CapKV: d.w.Cap()})
		}
		for i, p := range pres {
			out = append(out, metrics.WorkerSummary{Name: spec.Prefill[i].Name, Kind: "prefill", MaxKV: p.series.Max(), CapKV: b.capP[i]})
		}
		return out
	}
}

// addPool adds a fused deployment: the global router and one node per
// bucket owning its instances.
func (c *Cluster) addPool(spec *topology.Spec, pb *poolBuilt) {
	g := &globalNode{g: pb.global, configs: pb.configs, collector: c.driver.collector, pending: map[int64]*gather{}}
	gAddr := c.add(g, "router", KindGlobal)
	c.driver.router = gAddr
	var bns []*bucketNode
	for i, bb := range pb.buckets {
		bn := &bucketNode{id: i, cfg: bb.cfg, local: bb.local, cores: bb.cores,
			global: bb.global, rates: bb.rates, router: gAddr, collector: c.driver.collector,
			nic: bb.nic, bytesTok: bb.bytesTok, fetches: map[uint64]fetch{}}
		if bb.nic != nil {
			bn.rec, bn.recID = c.links, c.links.NIC(bb.nic.Config().Name, bb.nic.Config().LineRate)
		}
		for _, gi := range bb.global {
			s := metrics.NewSeries(spec.Fused[gi].Name, "fused")
			s.Bucket = bb.cfg.Name
			bn.series = append(bn.series, s)
			c.Series = append(c.Series, s)
		}
		bns = append(bns, bn)
		g.buckets = append(g.buckets, c.add(bn, "bucket:"+bb.cfg.Name, KindBucket))
	}
	c.wirePoolFaults(spec, pb, g, bns)
	c.workers = func() []metrics.WorkerSummary {
		var out []metrics.WorkerSummary
		for _, bn := range bns {
			for j, core := range bn.cores {
				out = append(out, metrics.WorkerSummary{Name: spec.Fused[bn.global[j]].Name, Kind: "fused",
					Bucket: bn.cfg.Name, MaxKV: core.MaxUsed(), CapKV: core.Cap()})
			}
		}
		return out
	}
}

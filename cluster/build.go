package cluster

import (
	"fmt"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy/bucket"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/transfer"
	"github.com/pdemu/pdemu/workload"
)

// built is a disaggregated scenario's cores and policy, built from the
// Spec, not yet wired into nodes.
type built struct {
	decode  []*gpu.DecodeWorker
	prefill []*gpu.PrefillWorker
	perfP   []gpu.Perf
	capP    []int // prefill workers' prefix-cache size in tokens
	nics    []nicSpec
	pol     RouterPolicy
	// Fresh workers for restarts after a crash, and the slowdown knobs
	// (nil without slow faults): faults.go.
	mkDecode  []func() *gpu.DecodeWorker
	mkPrefill []func() *gpu.PrefillWorker
	slowD     []*slowCost
	slowP     []*slowCost
	topoNICs  []topology.NIC
}

type nicSpec struct {
	name     string
	prefill  int
	nic      *transfer.NIC
	rateCap  rateCaps // by decode index; 0 = no link from this NIC
	bytesTok int64
}

// PerfFor returns the cost model Build uses for worker w: gpu.NewPerf's
// defaults for its model, GPU and TP, with the worker's HCL overrides
// (w.Perf) applied on top and validated. Errors name the worker.
func PerfFor(w topology.Worker) (gpu.Perf, error) { return perfFor(w) }

// NICConfigs returns the configuration of every NIC Build creates for spec
// (one per prefill worker and device, in order of first appearance), with
// the links' transport overrides; zero fields select transport defaults.
func NICConfigs(spec *topology.Spec) ([]transfer.Config, error) {
	nics, err := spec.NICs()
	if err != nil {
		return nil, err
	}
	out := make([]transfer.Config, len(nics))
	for i, n := range nics {
		out[i] = nicConfig(n)
	}
	return out, nil
}

func perfFor(w topology.Worker) (gpu.Perf, error) {
	m, err := gpu.LookupModel(w.Model)
	if err != nil {
		return gpu.Perf{}, fmt.Errorf("worker %s: %w", w.Name, err)
	}
	g, err := gpu.LookupGPU(w.GPU)
	if err != nil {
		return gpu.Perf{}, fmt.Errorf("worker %s: %w", w.Name, err)
	}
	p, err := gpu.NewPerf(m, g, max(w.TP, 1))
	if err != nil {
		return gpu.Perf{}, fmt.Errorf("worker %s: %w", w.Name, err)
	}
	// HCL overrides (mfu, mbu, ...) on top of the defaults; absent ones
	// keep them.
	o := w.Perf
	override(&p.MFU, o.MFU)
	override(&p.MBU, o.MBU)
	override(&p.CommEfficiency, o.CommEfficiency)
	override(&p.StepOverhead, o.StepOverhead)
	override(&p.PrefillOverhead, o.PrefillOverhead)
	override(&p.AllReduceLatency, o.AllReduceLatency)
	override(&p.ReservedMemory, o.ReservedMemory)
	if err := p.Validate(); err != nil {
		return gpu.Perf{}, fmt.Errorf("worker %s: %w", w.Name, err)
	}
	return p, nil
}

// override sets *dst to *v when v is set.
func override[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// nicConfig turns a topology NIC into a transfer.Config. An explicit
// setup of 0 becomes 1 ns: transfer.Config reads 0 as "transport default".
func nicConfig(n topology.NIC) transfer.Config {
	cfg := transfer.Config{
		Name: n.Prefill + "/" + n.Device, Transport: transfer.Transport(n.Transport),
		LineRate: n.Bandwidth, Latency: n.Latency,
		Efficiency: n.Efficiency, MaxRate: n.MaxRate,
	}
	if n.Setup != nil {
		cfg.Setup = max(*n.Setup, time.Nanosecond)
	}
	return cfg
}

// scheduleFaults schedules the NIC's faults (already in time order).
func scheduleFaults(nic *transfer.NIC, n topology.NIC) error {
	for _, f := range n.Faults {
		if f.At < 0 {
			return fmt.Errorf("NIC %s/%s: fault at %v: time must not be negative", n.Prefill, n.Device, f.At)
		}
		switch f.Kind {
		case topology.FaultDegrade:
			if !(f.Factor > 0 && f.Factor <= 1) {
				return fmt.Errorf("NIC %s/%s: degrade at %v: factor %g not in (0, 1]", n.Prefill, n.Device, f.At, f.Factor)
			}
			nic.Degrade(f.At, f.Factor)
		case topology.FaultCut:
			nic.Cut(f.At)
		case topology.FaultRestore:
			nic.Restore(f.At)
		default:
			return fmt.Errorf("NIC %s/%s: unknown fault kind %q", n.Prefill, n.Device, f.Kind)
		}
	}
	return nil
}

func budgetOf(w topology.Worker, p gpu.Perf) (int, error) {
	if w.KVBudgetTokens > 0 {
		return w.KVBudgetTokens, nil
	}
	frac := w.MemFractionStatic
	if frac == 0 {
		frac = 0.88
	}
	n := p.PoolTokens(frac)
	if n <= 0 {
		return 0, fmt.Errorf("worker %s: model %s does not fit on %s x%d with mem_fraction_static %g (no KV pool left)", w.Name, w.Model, w.GPU, max(w.TP, 1), frac)
	}
	return n, nil
}

// perfAndBudget is worker w's cost model and KV pool in tokens.
func perfAndBudget(w topology.Worker) (gpu.Perf, int, error) {
	p, err := perfFor(w)
	if err != nil {
		return p, 0, err
	}
	budget, err := budgetOf(w, p)
	return p, budget, err
}

func buildPD(spec *topology.Spec) (*built, error) {
	b := &built{}
	r := spec.Router
	decIdx := map[string]int{}
	for i, w := range spec.Decode {
		decIdx[w.Name] = i
		c, err := newCore(w, func(budget int, _ gpu.Perf, cost gpu.Cost) (*gpu.DecodeWorker, error) {
			return gpu.NewDecodeWorker(gpu.DecodeConfig{
				Name: w.Name, Budget: budget, Rho: r.Rho, TauAppend: r.TauAppend,
				ReserveOutput: r.ReserveOutput, NetCapacity: r.NetCapacity, MaxRunning: w.MaxRunning, ChunkTokens: w.MaxBatchTokens,
				ResidentAppend: r.ResidentAppend,
			}, cost)
		})
		if err != nil {
			return nil, err
		}
		b.decode = append(b.decode, c.core)
		b.slowD = append(b.slowD, c.slow)
		b.mkDecode = append(b.mkDecode, c.fresh)
	}
	preIdx := map[string]int{}
	for i, w := range spec.Prefill {
		preIdx[w.Name] = i
		c, err := newCore(w, func(budget int, _ gpu.Perf, cost gpu.Cost) (*gpu.PrefillWorker, error) {
			return gpu.NewPrefillWorker(gpu.PrefillConfig{Name: w.Name, CacheTokens: budget, MaxBatchTokens: w.MaxBatchTokens,
				SnapshotBackup:  Registry[PolicyKey{TierPD, spec.Router.Policy}].SnapshotBackup && !spec.Router.PrefillCacheBackup,
				FallbackRefresh: spec.Router.DPSync}, cost)
		})
		if err != nil {
			return nil, err
		}
		b.slowP = append(b.slowP, c.slow)
		b.mkPrefill = append(b.mkPrefill, c.fresh)
		b.prefill = append(b.prefill, c.core)
		b.perfP = append(b.perfP, c.perf)
		b.capP = append(b.capP, c.budget)
	}
	// One NIC per (prefill worker, device), shared by the links naming it;
	// its faults are scheduled before the run starts.
	nics, err := spec.NICs()
	if err != nil {
		return nil, err
	}
	b.topoNICs = nics
	for _, n := range nics {
		pi, ok := preIdx[n.Prefill]
		if !ok {
			return nil, fmt.Errorf("NIC %s/%s: unknown prefill worker %s", n.Prefill, n.Device, n.Prefill)
		}
		cfg := nicConfig(n)
		nic, err := transfer.NewNIC(cfg)
		if err != nil {
			return nil, fmt.Errorf("links over %s: %w", cfg.Name, err)
		}
		if err := scheduleFaults(nic, n); err != nil {
			return nil, err
		}
		ns := nicSpec{name: cfg.Name, prefill: pi, nic: nic,
			bytesTok: b.perfP[pi].KVBytesPerToken()}
		for _, li := range n.Links {
			l := spec.Links[li]
			di, ok := decIdx[l.To]
			if !ok {
				return nil, fmt.Errorf("link %s -> %s: unknown endpoint", l.From, l.To)
			}
			ns.rateCap.set(di, l.Bandwidth)
		}
		b.nics = append(b.nics, ns)
	}
	pol, err := newRouterPolicy(r, len(spec.Prefill), len(spec.Decode))
	if err != nil {
		return nil, err
	}
	b.pol = pol
	return b, nil
}

// Source builds the scenario's workload source: the trace named by the
// workload block (format detected when not given), or the agentic
// generator. skipBad makes trace loaders skip and count malformed records
// instead of failing on the first one. Close the source when done if it is
// an io.Closer.
func Source(spec *topology.Spec, skipBad bool) (workload.Source, error) {
	w := spec.Workload
	if w.Trace != "" {
		src, err := workload.Open(w.Trace, w.Format, workload.LoadOptions{
			SkipBad: skipBad || w.Replay.SkipBad, MaxRequests: w.MaxRequests, Seed: w.Seed,
			SessionRate: w.Replay.SessionRate, MaxConcurrent: w.Replay.MaxConcurrent, TraceTime: w.Replay.TraceTime,
			ShareSystemPrefix: w.Replay.SharePrefix, InferSessions: w.Replay.InferSessions,
		})
		if err != nil || w.ClientCap <= 0 {
			return src, err
		}
		return workload.WithClientCap(src, w.ClientCap), nil // closes src on Close
	}
	g := w.Generator
	var src workload.Source
	var err error
	switch g.Kind {
	case "swebench", "burst": // issue 10's generators (workload/swebench.go, workload/burst.go)
		if g.Kind == "burst" {
			src, err = workload.NewBurst(workload.BurstConfig{})
		} else {
			src, err = workload.NewSWEBench(swebenchConfig(g), w.Seed) // cluster/swebench.go
		}
		src = workload.Limit(src, w.MaxRequests)
	default:
		src, err = workload.NewAgentic(workload.AgenticConfig{
			Exact:    true, // topology applied the defaults: a 0 here was written
			Sessions: g.Sessions, Turns: g.Turns, SystemTokens: g.SystemTokens, FirstTokens: g.FirstTokens,
			AppendTokens: g.AppendTokens, OutputTokens: g.OutputTokens, ThinkTime: g.ThinkTime,
			SessionStagger: g.SessionStagger, BlockTokens: g.BlockTokens,
		}, w.Seed, w.MaxRequests)
	}
	if err != nil || w.ClientCap <= 0 {
		return src, err
	}
	return workload.WithClientCap(src, w.ClientCap), nil
}

// poolBuilt is a fused deployment's cores and routers.
type poolBuilt struct {
	global  bucket.Global
	configs []bucket.BucketConfig
	buckets []poolBucket
}

type poolBucket struct {
	nic      *transfer.NIC // intra-bucket RDMA fabric for remote prefix fetches (nil = none)
	bytesTok int64
	cfg      bucket.BucketConfig
	local    bucket.Local
	cores    []*gpu.FusedWorker
	global   []int     // instance → index in spec.Fused
	rates    []float64 // prefill tokens/s of a cold 8K prompt, for estimated_ttft
	// Restarts after a crash and slowdowns (faults.go).
	mkLocal func() bucket.Local
	mkCore  []func() *gpu.FusedWorker
	slow    []*slowCost
}

func buildPool(spec *topology.Spec) (*poolBuilt, error) {
	idx := map[string]int{}
	for i, w := range spec.Fused {
		idx[w.Name] = i
	}
	pb := &poolBuilt{}
	for _, bs := range spec.Buckets {
		cfg := bucket.BucketConfig{Name: bs.Name, Range: bucket.Range{Min: bs.Min, Max: bs.Max}, Instances: len(bs.Instances)}
		pb.configs = append(pb.configs, cfg)
		lr := spec.LocalRouter
		lcfg := bucket.LocalConfig{
			Policy: lr.Policy, MetaStoreTTL: lr.MetaStoreTTL, ProbeLatency: lr.ProbeLatency, ProbeTopK: lr.ProbeTopK,
			LoadAlpha: lr.LoadAlpha, ScoreAlpha: lr.ScoreAlpha, ScoreBeta: lr.ScoreBeta, PrefixK: lr.PrefixK, FanOut: lr.FanOut,
			OverloadFactor: lr.OverloadFactor, KVC: bucket.KVCConfig{Alpha: lr.Alpha},
			CacheThreshold: &lr.CacheThreshold, BalanceAbs: &lr.BalanceAbs, BalanceRel: &lr.BalanceRel,
			MissRule: lr.MissRule, InclusiveMatch: lr.InclusiveMatch,
			// Each bucket draws its own random sequence.
			Seed: spec.Workload.Seed ^ (uint64(len(pb.configs)) * 0x9e3779b97f4a7c15),
		}
		n := len(bs.Instances)
		local, err := newLocalPolicy(lcfg, n)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", bs.Name, err)
		}
		_, blind := local.(bucket.EvictionBlind)
		pbk := poolBucket{cfg: cfg, local: local, mkLocal: func() bucket.Local {
			fresh, _ := newLocalPolicy(lcfg, n) // succeeded above
			return fresh
		}}
		for _, name := range bs.Instances {
			gi, ok := idx[name]
			if !ok {
				return nil, fmt.Errorf("bucket %s: instance %q is not a fused worker", bs.Name, name)
			}
			w := spec.Fused[gi]
			dramBW := w.DRAMBandwidth
			if dramBW == 0 {
				dramBW = topology.DefaultDRAMBandwidth
			}
			c, err := newCore(w, func(budget int, p gpu.Perf, cost gpu.Cost) (*gpu.FusedWorker, error) {
				return gpu.NewFusedWorker(gpu.FusedConfig{Name: w.Name, Budget: budget, Rho: spec.Router.Rho,
					MaxRunning: w.MaxRunning, ChunkTokens: w.MaxBatchTokens,
					DRAMTokens: w.DRAMCacheTokens, DRAMBandwidth: dramBW, KVBytesPerToken: p.KVBytesPerToken(),
					EvictedCountOnly: blind}, cost)
			})
			if err != nil {
				return nil, err
			}
			pbk.slow = append(pbk.slow, c.slow)
			pbk.mkCore = append(pbk.mkCore, c.fresh)
			pbk.cores = append(pbk.cores, c.core)
			pbk.global = append(pbk.global, gi)
			pbk.rates = append(pbk.rates, c.perf.PrefillThroughput(8192))
		}
		if bs.RemoteFetchBandwidth > 0 {
			nic, err := transfer.NewNIC(transfer.Config{Name: "bucket:" + bs.Name, Transport: transfer.RDMA,
				LineRate: bs.RemoteFetchBandwidth, Latency: topology.DefaultLatency})
			if err != nil {
				return nil, fmt.Errorf("bucket %s: %w", bs.Name, err)
			}
			p, err := perfFor(spec.Fused[pbk.global[0]])
			if err != nil {
				return nil, err
			}
			pbk.nic, pbk.bytesTok = nic, p.KVBytesPerToken()
		}
		pb.buckets = append(pb.buckets, pbk)
	}
	gr := spec.GlobalRouter
	g, err := newGlobalPolicy(bucket.GlobalConfig{Policy: gr.Policy, LengthPenaltyWeight: gr.LengthPenaltyWeight,
		LoadWeight: gr.LoadWeight, CacheWeight: gr.CacheWeight}, pb.configs)
	if err != nil {
		return nil, err
	}
	pb.global = g
	return pb, nil
}

// workerCore is a worker's core as Build makes it: the core, the maker of the
// fresh core a crash restarts it as, its slowdown knob (faultCost), and
// the cost model and KV pool in tokens it was made with.
type workerCore[W any] struct {
	core   W
	fresh  func() W
	slow   *slowCost
	perf   gpu.Perf
	budget int
}

// newCore makes worker w's core with mk from w's KV pool, cost model and
// the cost wrapped for its slow faults (perfAndBudget, faultCost). A
// restart calls mk again with the same arguments, which succeeded once,
// so fresh drops its nil error.
func newCore[W any](w topology.Worker, mk func(budget int, p gpu.Perf, cost gpu.Cost) (W, error)) (workerCore[W], error) {
	p, budget, err := perfAndBudget(w)
	if err != nil {
		return workerCore[W]{}, err
	}
	cost, slow := faultCost(w, p)
	c := workerCore[W]{slow: slow, perf: p, budget: budget}
	c.core, err = mk(budget, p, cost)
	c.fresh = func() W { fresh, _ := mk(budget, p, cost); return fresh }
	return c, err
}

package actors

import (
	"fmt"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/transfer"
	"github.com/pdemu/pdemu/workload"
)

// Built is a scenario's cluster, built from the Spec but not yet running.
type built struct {
	decode  []*gpu.DecodeWorker
	prefill []*gpu.PrefillWorker
	perfP   []gpu.Perf
	nics    []nicSpec
	pol     routerPolicy
	kvc     *policy.KVC
}

type nicSpec struct {
	name     string
	prefill  int
	nic      *transfer.NIC
	rateCap  []float64 // by decode index; 0 = no link from this NIC
	bytesTok int64
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
	return p, nil
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

func build(spec *topology.Spec) (*built, error) {
	b := &built{}
	r := spec.Router
	decIdx := map[string]int{}
	for i, w := range spec.Decode {
		decIdx[w.Name] = i
		p, err := perfFor(w)
		if err != nil {
			return nil, err
		}
		budget, err := budgetOf(w, p)
		if err != nil {
			return nil, err
		}
		dw, err := gpu.NewDecodeWorker(gpu.DecodeConfig{
			Name: w.Name, Budget: budget, Rho: r.Rho, TauAppend: r.TauAppend,
			ReserveOutput: r.ReserveOutput, NetCapacity: r.NetCapacity, MaxRunning: w.MaxRunning,
		}, p)
		if err != nil {
			return nil, err
		}
		b.decode = append(b.decode, dw)
	}
	preIdx := map[string]int{}
	for i, w := range spec.Prefill {
		preIdx[w.Name] = i
		p, err := perfFor(w)
		if err != nil {
			return nil, err
		}
		budget, err := budgetOf(w, p)
		if err != nil {
			return nil, err
		}
		pw, err := gpu.NewPrefillWorker(gpu.PrefillConfig{Name: w.Name, CacheTokens: budget, MaxBatchTokens: w.MaxBatchTokens}, p)
		if err != nil {
			return nil, err
		}
		b.prefill = append(b.prefill, pw)
		b.perfP = append(b.perfP, p)
	}
	// One NIC per (prefill worker, device), shared by the links naming it.
	nicIdx := map[string]int{}
	for _, l := range spec.Links {
		pi, ok1 := preIdx[l.From]
		di, ok2 := decIdx[l.To]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("link %s -> %s: unknown endpoint", l.From, l.To)
		}
		key := l.From + "/" + l.Device
		ni, ok := nicIdx[key]
		if !ok {
			nic, err := transfer.NewNIC(transfer.Config{
				Name: key, Transport: transfer.Transport(l.Transport),
				LineRate: l.Bandwidth, Latency: l.Latency,
			})
			if err != nil {
				return nil, fmt.Errorf("link %s -> %s: %w", l.From, l.To, err)
			}
			ni = len(b.nics)
			nicIdx[key] = ni
			b.nics = append(b.nics, nicSpec{name: key, prefill: pi, nic: nic,
				rateCap: make([]float64, len(spec.Decode)), bytesTok: b.perfP[pi].KVBytesPerToken()})
		} else if b.nics[ni].nic.Config().LineRate < l.Bandwidth {
			// A NIC shared by several links: its own rate is the largest link rate.
			return nil, fmt.Errorf("links over %s declare different bandwidths; give every link over one device the same bandwidth", key)
		}
		b.nics[ni].rateCap[di] = l.Bandwidth
	}
	np, nd := len(spec.Prefill), len(spec.Decode)
	switch r.Policy {
	case "kvc":
		k, err := policy.NewKVC(policy.KVCConfig{
			Alpha: r.Alpha, TauReject: r.TauReject, Epsilon: r.Epsilon, V1: r.V1,
			Prefill: np, Decode: nd,
		})
		if err != nil {
			return nil, err
		}
		b.pol, b.kvc = k, k
	case "vanilla":
		v, err := policy.NewVanilla(np, nd)
		if err != nil {
			return nil, err
		}
		b.pol = v
	default:
		return nil, fmt.Errorf("router policy %q is not runnable yet", r.Policy)
	}
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
		return workload.Open(w.Trace, w.Format, workload.LoadOptions{
			SkipBad: skipBad, MaxRequests: w.MaxRequests, Seed: w.Seed,
		})
	}
	g := w.Generator
	return workload.NewAgentic(workload.AgenticConfig{
		Sessions: g.Sessions, Turns: g.Turns, SystemTokens: g.SystemTokens, FirstTokens: g.FirstTokens,
		AppendTokens: g.AppendTokens, OutputTokens: g.OutputTokens, ThinkTime: g.ThinkTime,
		SessionStagger: g.SessionStagger, BlockTokens: g.BlockTokens,
	}, w.Seed, w.MaxRequests)
}

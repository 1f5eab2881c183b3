package fleet

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/transfer"
)

// Add starts worker w with role at now, cloned from the links of worker
// like (a worker of the same role; "" = the first one): a new decode
// worker is reachable over every NIC that reaches like, at the same line
// rate; a new prefill worker gets copies of like's NICs. It is ready after
// Options.Startup(w).
func (f *Fleet) Add(now time.Duration, w topology.Worker, role Role, like string) error {
	f.Advance(now)
	var tmpl *worker
	for _, o := range f.workers {
		if o.role == role && (like == "" || o.name == like) {
			tmpl = o
			break
		}
	}
	if tmpl == nil {
		if like != "" {
			return fmt.Errorf("fleet: %w: %q (to clone the links of a new %s worker)", ErrUnknownWorker, like, role)
		}
		return fmt.Errorf("fleet: no %s worker to clone the links of", role)
	}
	if w.GPU == "" {
		w.GPU = tmpl.spec.GPU
	}
	if w.Model == "" {
		w.Model = tmpl.spec.Model
	}
	if w.TP == 0 {
		w.TP = tmpl.spec.TP
	}
	if w.KVBudgetTokens == 0 && w.MemFractionStatic == 0 {
		w.KVBudgetTokens, w.MemFractionStatic = tmpl.spec.KVBudgetTokens, tmpl.spec.MemFractionStatic
	}
	if w.MaxBatchTokens == 0 {
		w.MaxBatchTokens = tmpl.spec.MaxBatchTokens
	}
	if w.MaxRunning == 0 {
		w.MaxRunning = tmpl.spec.MaxRunning
	}
	if w.DRAMCacheTokens == 0 && w.DRAMBandwidth == 0 {
		w.DRAMCacheTokens, w.DRAMBandwidth = tmpl.spec.DRAMCacheTokens, tmpl.spec.DRAMBandwidth
	}
	if w.Perf == (topology.PerfOverrides{}) {
		w.Perf = tmpl.spec.Perf
	}
	w.Kind = tmpl.spec.Kind
	var delay time.Duration
	if f.opts.Startup != nil {
		delay = f.opts.Startup(w)
	}
	var nics []*nic
	switch role {
	case RoleDecode:
		for _, o := range f.workers {
			for _, n := range o.nics {
				if c, ok := n.caps[tmpl.name]; ok {
					n.caps[w.Name] = c
				}
			}
		}
	case RolePrefill:
		for _, n := range tmpl.nics {
			cfg := n.nic.Config()
			cfg.Name = w.Name + cfg.Name[len(tmpl.name):]
			tn, err := transfer.NewNIC(cfg)
			if err != nil {
				return err
			}
			nn := &nic{name: cfg.Name, nic: tn, caps: map[string]float64{}, jobs: map[uint64]*gpu.Job{}}
			for k, v := range n.caps {
				nn.caps[k] = v
			}
			nics = append(nics, nn)
		}
	}
	return f.add(now, w, role, nics, delay)
}

// Drain stops sending new requests to worker name; it leaves (StateGone)
// once nothing is in flight on it or on its NICs.
func (f *Fleet) Drain(now time.Duration, name string) error {
	f.Advance(now)
	w := f.byName[name]
	if w == nil {
		return fmt.Errorf("fleet: %w: %q", ErrUnknownWorker, name)
	}
	switch w.state {
	case StateGone:
		return fmt.Errorf("fleet: %q: %w", name, ErrGone)
	case StateDraining:
		return nil
	}
	w.state = StateDraining
	f.out = append(f.out, Out{Kind: OutWorker, At: now, Worker: name, State: StateDraining})
	f.leaveIfIdle(now, w)
	return nil
}

func (f *Fleet) leaveIfIdle(now time.Duration, w *worker) {
	if w.state != StateDraining || len(w.inflight) > 0 {
		return
	}
	for _, n := range w.nics {
		if len(n.jobs) > 0 {
			return
		}
	}
	w.state = StateGone
	f.out = append(f.out, Out{Kind: OutWorker, At: now, Worker: w.name, State: StateGone})
	// Its KV is gone with it: a subscriber that still listens hears
	// every block removed.
	if len(w.blocks) > 0 {
		f.out = append(f.out, Out{Kind: OutKV, At: now, Worker: w.name, Removed: slices.Sorted(maps.Keys(w.blocks))})
		clear(w.blocks)
	}
	for id, h := range f.holds {
		if h.Engine == w.name {
			delete(f.holds, id)
		}
	}
}

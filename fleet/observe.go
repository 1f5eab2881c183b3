package fleet

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/workload"
)

// Take returns and clears what happened since the last call, in order.
func (f *Fleet) Take() []Out {
	out := f.out
	f.out = nil
	return out
}

// Ended returns and clears the jobs that ended since the last call, in
// end order (for the outputs).
func (f *Fleet) Ended() []*gpu.Job {
	out := f.ended
	f.ended = nil
	return out
}

// Workers lists every worker ever created, in creation order (gone ones
// too: filter on State).
func (f *Fleet) Workers() []WorkerInfo {
	out := make([]WorkerInfo, 0, len(f.workers))
	for _, w := range f.workers {
		wi := WorkerInfo{Name: w.name, Role: w.role, State: w.state, ReadyAt: w.readyAt, Spec: w.spec, Index: w.idx,
			InFlight: len(w.inflight), KVCap: w.cap}
		switch w.role {
		case RolePrefill:
			wi.Running, wi.Waiting, wi.KVUsed = w.p.Running(), w.p.Queued(), w.p.CacheUsed()
		case RoleFused:
			wi.Running, wi.Waiting, wi.KVUsed = w.fu.Running(), w.fu.Queued(), w.fu.Used()
		default:
			wi.Running, wi.Waiting, wi.KVUsed = w.d.Running(), w.d.Queued(), w.d.Used()
		}
		out = append(out, wi)
	}
	return out
}

// Worker is one worker's info.
func (f *Fleet) Worker(name string) (WorkerInfo, bool) {
	for _, wi := range f.Workers() {
		if wi.Name == name {
			return wi, true
		}
	}
	return WorkerInfo{}, false
}

// Names returns the prefill and decode worker names by role index (the
// outputs' worker columns); fused workers follow the decode workers.
func (f *Fleet) Names() (prefill, decode []string) {
	var fused []string
	for _, w := range f.workers {
		switch w.role {
		case RolePrefill:
			prefill = append(prefill, w.name)
		case RoleFused:
			fused = append(fused, w.name)
		default:
			decode = append(decode, w.name)
		}
	}
	return prefill, append(decode, fused...)
}

// ResolveColumns rewrites the ended jobs' fused-worker columns (negative
// D, see fusedCol) to their index in Names' decode list; call it on the
// jobs of Ended once no more workers will be added.
func (f *Fleet) ResolveColumns(jobs []*gpu.Job) {
	_, dec := f.Names()
	nd := len(dec) - f.nFused
	for _, j := range jobs {
		if j.D < 0 && j.Mode == policy.ModeFused {
			j.D = nd + (-1 - j.D)
		}
	}
}

// LinkState is one NIC's traffic so far and its load now.
type LinkState struct {
	Name     string
	Worker   string // the prefill worker it belongs to
	Bytes    int64  // KV bytes started on it so far
	Active   int    // transfers in flight
	InFlight int64  // bytes still to move
	Rate     float64
	LineRate float64 // bytes/s
}

// Links lists every NIC, in creation order.
func (f *Fleet) Links() []LinkState {
	var out []LinkState
	for _, w := range f.workers {
		for _, n := range w.nics {
			b, r := n.nic.Load(f.now)
			out = append(out, LinkState{Name: n.name, Worker: w.name, Bytes: n.bytes, Active: n.nic.Active(), InFlight: b, Rate: r, LineRate: n.nic.Bandwidth()})
		}
	}
	return out
}

// Residency is the set of block hashes worker name holds now, by its own
// state (the prefill worker's prefix cache; the decode worker's resident
// sessions' prompt blocks), sorted: what the published KV events must add
// up to.
func (f *Fleet) Residency(name string) []uint64 {
	w := f.byName[name]
	if w == nil || w.state == StateGone {
		return nil
	}
	set := map[uint64]int{}
	switch w.role {
	case RolePrefill:
		for _, b := range w.p.CacheKeys() {
			set[b] = 1
		}
	case RoleFused:
		for _, b := range w.fu.CacheKeys() {
			set[b] = 1
		}
	default:
		w.d.ResidentSessions(func(_ int32, blocks []uint64) {
			for _, b := range blocks {
				set[b] = 1
			}
		})
	}
	return slices.Sorted(maps.Keys(set))
}

// purge drops the holds expired at now (nobody pulled them: vLLM frees
// their blocks after the abort timeout), so the map stays bounded by the
// holds of the last HoldTimeout.
func (f *Fleet) purge(now time.Duration) {
	for id, h := range f.holds {
		if now > h.Expires {
			delete(f.holds, id)
		}
	}
	f.purgeAt = max(1024, 2*len(f.holds))
}

// holdFor is engine's oldest hold of r's prompt (nil if none).
func (f *Fleet) holdFor(engine string, r *workload.Request) *Handoff {
	var best *Handoff
	for _, h := range f.holds {
		if h.Engine != engine || h.InputLen != r.InputLen || !slices.Equal(h.Blocks, r.Blocks) {
			continue
		}
		if best == nil || h.Expires < best.Expires || (h.Expires == best.Expires && h.RequestID < best.RequestID) {
			best = h
		}
	}
	return best
}

// InFlight is every job submitted and not ended, by request ID (for a
// run cut short: per_request.csv's unfinished rows).
func (f *Fleet) InFlight() []*gpu.Job {
	var out []*gpu.Job
	for _, w := range f.workers {
		for _, j := range w.inflight {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b *gpu.Job) int { return cmp.Compare(a.Req.ID, b.Req.ID) })
	return out
}

// Holds is the number of hand-offs waiting to be pulled.
func (f *Fleet) Holds() int { return len(f.holds) }

// Now is the fleet's emulated time (the last Advance).
func (f *Fleet) Now() time.Duration { return f.now }

package topology

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// checkInvariants verifies the contract of a Spec returned by Parse. Tests
// and the fuzz target run it on every successful parse.
func checkInvariants(s *Spec) error {
	if s == nil {
		return fmt.Errorf("nil spec")
	}
	kinds := map[string]Kind{}
	n := 0
	for _, group := range []struct {
		kind Kind
		ws   []Worker
	}{{KindPrefill, s.Prefill}, {KindDecode, s.Decode}, {KindFused, s.Fused}} {
		for _, w := range group.ws {
			n++
			if w.Name == "" {
				return fmt.Errorf("empty worker name")
			}
			if _, dup := kinds[w.Name]; dup {
				return fmt.Errorf("duplicate worker %q", w.Name)
			}
			kinds[w.Name] = w.Kind
			switch {
			case w.Kind != group.kind:
				return fmt.Errorf("worker %q has kind %q in the %s list", w.Name, w.Kind, group.kind)
			case w.GPU == "" || w.Model == "":
				return fmt.Errorf("worker %q: empty preset", w.Name)
			case w.TP < 1:
				return fmt.Errorf("worker %q: tp %d", w.Name, w.TP)
			case w.KVBudgetTokens < 0:
				return fmt.Errorf("worker %q: kv budget %d", w.Name, w.KVBudgetTokens)
			case !(w.MemFractionStatic > 0 && w.MemFractionStatic <= 1):
				return fmt.Errorf("worker %q: mem_fraction_static %v", w.Name, w.MemFractionStatic)
			case w.MaxBatchTokens < 1:
				return fmt.Errorf("worker %q: max_batch_tokens %d", w.Name, w.MaxBatchTokens)
			case w.MaxRunning < 1:
				return fmt.Errorf("worker %q: max_running %d", w.Name, w.MaxRunning)
			}
			if err := checkPerfOverrides(w.Perf); err != nil {
				return fmt.Errorf("worker %q: %v", w.Name, err)
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("no workers")
	}
	pairs := map[[2]string]bool{}
	for _, l := range s.Links {
		if kinds[l.From] != KindPrefill || kinds[l.To] != KindDecode {
			return fmt.Errorf("link %s->%s: bad endpoints", l.From, l.To)
		}
		if pairs[[2]string{l.From, l.To}] {
			return fmt.Errorf("duplicate link %s->%s", l.From, l.To)
		}
		pairs[[2]string{l.From, l.To}] = true
		if l.Transport != TransportRDMA && l.Transport != TransportTCP {
			return fmt.Errorf("link %s->%s: transport %q", l.From, l.To, l.Transport)
		}
		if l.Device == "" || !(l.Bandwidth > 0) || math.IsInf(l.Bandwidth, 0) || l.Latency < 0 {
			return fmt.Errorf("link %s->%s: %+v", l.From, l.To, l)
		}
		if !(l.Efficiency >= 0 && l.Efficiency <= 1) || !(l.MaxRate >= 0) || math.IsInf(l.MaxRate, 0) || (l.Setup != nil && *l.Setup < 0) {
			return fmt.Errorf("link %s->%s: transport overrides %+v", l.From, l.To, l)
		}
		for _, f := range l.Faults {
			ok := f.At >= 0
			switch f.Kind {
			case FaultDegrade:
				ok = ok && f.Factor > 0 && f.Factor <= 1
			case FaultCut, FaultRestore:
				ok = ok && f.Factor == 0
			default:
				ok = false
			}
			if !ok {
				return fmt.Errorf("link %s->%s: fault %+v", l.From, l.To, f)
			}
		}
	}
	nics, err := s.NICs()
	if err != nil {
		return err
	}
	nLinks, nFaults := 0, 0
	for _, n := range nics {
		nLinks += len(n.Links)
		for i, f := range n.Faults {
			if i > 0 && f.At < n.Faults[i-1].At {
				return fmt.Errorf("NIC %s/%s: faults out of order", n.Prefill, n.Device)
			}
		}
		nFaults += len(n.Faults)
	}
	if nLinks != len(s.Links) {
		return fmt.Errorf("NICs cover %d of %d links", nLinks, len(s.Links))
	}
	allFaults := 0
	for _, l := range s.Links {
		allFaults += len(l.Faults)
	}
	if nFaults > allFaults {
		return fmt.Errorf("NICs hold %d faults, links %d", nFaults, allFaults)
	}
	if s.Router.Policy == PolicyBuckets || len(s.Buckets) > 0 {
		if err := checkBuckets(s); err != nil {
			return err
		}
	}
	if s.Router.Policy == PolicyBuckets {
		return checkRest(s)
	}
	pol := lookupPolicy(s.Router.Policy)
	if pol == nil {
		return fmt.Errorf("unknown policy %q", s.Router.Policy)
	}
	if pol.local != (len(s.Buckets) == 1) || (pol.local && (s.Buckets[0].Name != ImplicitBucket ||
		s.Buckets[0].Max != math.MaxInt || s.GlobalRouter.Policy != GlobalStrictInputLength || s.LocalRouter.Policy != pol.name)) {
		return fmt.Errorf("policy %q with buckets %+v, global %+v, local %+v", pol.name, s.Buckets, s.GlobalRouter, s.LocalRouter)
	}
	for _, k := range pol.kinds {
		count := map[Kind]int{KindPrefill: len(s.Prefill), KindDecode: len(s.Decode), KindFused: len(s.Fused)}[k]
		if count == 0 {
			return fmt.Errorf("policy %q without %s workers", pol.name, k)
		}
	}
	if pol.fullMesh {
		for _, p := range s.Prefill {
			for _, d := range s.Decode {
				if !pairs[[2]string{p.Name, d.Name}] {
					return fmt.Errorf("missing link %s->%s", p.Name, d.Name)
				}
			}
		}
	}
	return checkRest(s)
}

// checkRest checks the router parameters and the workload.
func checkRest(s *Spec) error {
	r := s.Router
	switch {
	case !(r.Alpha >= 0) || math.IsInf(r.Alpha, 0):
		return fmt.Errorf("alpha %v", r.Alpha)
	case r.TauReject < 1, r.TauAppend < 0, r.Epsilon < 1, r.BlockTokens < 1:
		return fmt.Errorf("router %+v", r)
	case !(r.Rho > 0 && r.Rho <= 1):
		return fmt.Errorf("rho %v", r.Rho)
	}
	w := s.Workload
	switch {
	case w.Clock != ClockVirtual && w.Clock != ClockWall:
		return fmt.Errorf("clock %q", w.Clock)
	case w.Loop != LoopOpen && w.Loop != LoopClosed:
		return fmt.Errorf("loop %q", w.Loop)
	case !(w.TimeScale > 0) || math.IsInf(w.TimeScale, 0):
		return fmt.Errorf("time_scale %v", w.TimeScale)
	case w.MaxRequests < 0 || w.SampleInterval <= 0:
		return fmt.Errorf("workload %+v", w)
	}
	g := w.Generator
	if g.Sessions < 1 || g.Turns < 1 || g.SystemTokens < 0 || g.FirstTokens < 1 || g.AppendTokens < 0 ||
		g.OutputTokens < 1 || g.ThinkTime < 0 || g.SessionStagger < 0 || g.BlockTokens < 1 {
		return fmt.Errorf("generator %+v", g)
	}
	return nil
}

// checkBuckets checks the bucket routing fields.
func checkBuckets(s *Spec) error {
	if len(s.Buckets) == 0 {
		return fmt.Errorf("bucket routing without buckets")
	}
	if len(s.Prefill)+len(s.Decode) > 0 {
		return fmt.Errorf("bucket routing with prefill or decode workers")
	}
	fused := map[string]bool{}
	for _, w := range s.Fused {
		fused[w.Name] = true
	}
	names := map[string]bool{}
	owner := map[string]string{}
	for _, b := range s.Buckets {
		if b.Name == "" || names[b.Name] {
			return fmt.Errorf("bucket name %q empty or duplicate", b.Name)
		}
		names[b.Name] = true
		if b.Min < 0 || b.Min > b.Max || len(b.Instances) == 0 {
			return fmt.Errorf("bucket %+v", b)
		}
		for _, i := range b.Instances {
			if !fused[i] {
				return fmt.Errorf("bucket %q: instance %q is not a fused worker", b.Name, i)
			}
			if o, dup := owner[i]; dup {
				return fmt.Errorf("worker %q in buckets %q and %q", i, o, b.Name)
			}
			owner[i] = b.Name
		}
	}
	if len(owner) != len(fused) {
		return fmt.Errorf("%d of %d fused workers in buckets", len(owner), len(fused))
	}
	sorted := slices.Clone(s.Buckets)
	slices.SortFunc(sorted, func(a, b Bucket) int { return cmp.Compare(a.Min, b.Min) })
	for k := 1; k < len(sorted); k++ {
		if sorted[k].Min != sorted[k-1].Max+1 {
			return fmt.Errorf("buckets %q and %q overlap or leave a gap", sorted[k-1].Name, sorted[k].Name)
		}
	}
	g := s.GlobalRouter
	if lookupGlobal(g.Policy) == nil {
		return fmt.Errorf("global policy %q", g.Policy)
	}
	for _, w := range []float64{g.LengthPenaltyWeight, g.LoadWeight, g.CacheWeight} {
		if !(w >= 0) || math.IsInf(w, 0) {
			return fmt.Errorf("global router %+v", g)
		}
	}
	l := s.LocalRouter
	if lookupLocal(l.Policy) == nil {
		return fmt.Errorf("local policy %q", l.Policy)
	}
	for _, w := range []float64{l.LoadAlpha, l.ScoreAlpha, l.ScoreBeta, l.Alpha} {
		if !(w >= 0) || math.IsInf(w, 0) {
			return fmt.Errorf("local router %+v", l)
		}
	}
	if l.MetaStoreTTL < 0 || l.ProbeLatency < 0 || l.ProbeTopK < 0 || l.PrefixK < 1 || l.FanOut < 0 ||
		!(l.OverloadFactor >= 1) || math.IsInf(l.OverloadFactor, 0) {
		return fmt.Errorf("local router %+v", l)
	}
	return nil
}

func checkPerfOverrides(o PerfOverrides) error {
	for name, v := range map[string]*float64{"mfu": o.MFU, "mbu": o.MBU, "comm_efficiency": o.CommEfficiency} {
		if v != nil && !(*v > 0 && *v <= 1) {
			return fmt.Errorf("%s %v", name, *v)
		}
	}
	for name, v := range map[string]*time.Duration{"step_overhead": o.StepOverhead, "prefill_overhead": o.PrefillOverhead, "allreduce_latency": o.AllReduceLatency} {
		if v != nil && *v < 0 {
			return fmt.Errorf("%s %v", name, *v)
		}
	}
	if v := o.ReservedMemory; v != nil && !(*v >= 0 && !math.IsInf(*v, 0)) {
		return fmt.Errorf("reserved_memory %v", *v)
	}
	return nil
}

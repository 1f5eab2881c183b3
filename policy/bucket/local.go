package bucket

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/pdemu/pdemu/workload"
)

type localKind uint8

const (
	lRandom localKind = iota
	lRoundRobin
	lLeastLoaded
	lLeastTokens
	lCacheScore
	lTTLAware
	lPrecise
	lCacheLoad
	lEstimatedTTFT
	lPrefixAffinity
	lCacheAffinity
	lKVC
)

// Local policy names.
const (
	PolicyRandom         = "random"
	PolicyRoundRobin     = "round_robin"
	PolicyLeastLoaded    = "least_loaded"
	PolicyLeastTokens    = "least_tokens"
	PolicyCacheScore     = "cache_score"
	PolicyTTLAware       = "ttl_aware"
	PolicyPrecise        = "precise"
	PolicyCacheLoad      = "cache_load"
	PolicyEstimatedTTFT  = "estimated_ttft"
	PolicyPrefixAffinity = "prefix_affinity"
	PolicyCacheAffinity  = "cache_affinity"
	PolicyKVC            = "kvc"
)

var localKinds = map[string]localKind{
	PolicyRandom:         lRandom,
	PolicyRoundRobin:     lRoundRobin,
	PolicyLeastLoaded:    lLeastLoaded,
	PolicyLeastTokens:    lLeastTokens,
	PolicyCacheScore:     lCacheScore,
	PolicyTTLAware:       lTTLAware,
	PolicyPrecise:        lPrecise,
	PolicyCacheLoad:      lCacheLoad,
	PolicyEstimatedTTFT:  lEstimatedTTFT,
	PolicyPrefixAffinity: lPrefixAffinity,
	PolicyCacheAffinity:  lCacheAffinity,
	PolicyKVC:            lKVC,
}

// LocalPolicies returns the local policy names, sorted.
func LocalPolicies() []string {
	names := make([]string, 0, len(localKinds)+1)
	for n := range localKinds {
		names = append(names, n)
	}
	names = append(names, PolicyCacheAwareDP)
	sort.Strings(names)
	return names
}

// Local decision reasons.
const (
	ReasonRandom        = "random"
	ReasonRoundRobin    = "round-robin"
	ReasonBest          = "best"            // the policy's best score
	ReasonHome          = "home"            // prefix_affinity, cache_affinity: the rendezvous home
	ReasonFanOut        = "fan-out"         // prefix_affinity, cache_affinity: least loaded of the top FanOut
	ReasonLongerPrefix  = "longer-prefix"   // cache_affinity: the meta-store shows a longer prefix off home
	ReasonOverloaded    = "overloaded"      // cache_affinity: the preferred instance was overloaded
	ReasonProbed        = "probed"          // precise: longest probed prefix
	ReasonNoProber      = "no-prober"       // precise without a Prober: meta-store prediction only
	ReasonNoBlocks      = "no-blocks"       // precise: nothing to probe, least loaded
	ReasonSticky        = "sticky"          // kvc: the session's last instance won
	ReasonNoRate        = "no-prefill-rate" // estimated_ttft: no instance has a prefill rate, least loaded
	ReasonViewsMismatch = "instance views do not match the bucket"
)

// local implements every local policy: they share the meta-store, the
// counters and the candidate bookkeeping, and differ in one scoring step.
type local struct {
	name string
	kind localKind
	cfg  LocalConfig
	n    int

	store    *metaStore
	rng      *rand.Rand
	rr       int
	inflight []int           // kvc: routed and not finished, per instance
	assigned []int64         // kvc: routed ever, per instance
	last     map[int32]int32 // kvc: session → last instance
	// hints: the meta-store owner nodes of the blocks each session last
	// recorded on each instance (with a TTL; see metaStore.recordHinted).
	hints map[hintKey][]int32

	pre   []int   // scratch: predicted prefix per instance
	order []int32 // scratch: instance order
}

// NewLocal returns the local router cfg.Policy over instances instances,
// with an empty meta-store.
func NewLocal(cfg LocalConfig, instances int) (Local, error) {
	if cfg.Policy == PolicyCacheAwareDP {
		if instances < 1 {
			return nil, fmt.Errorf("bucket: local policy %s needs at least one instance, got %d", cfg.Policy, instances)
		}
		return newCacheAwareLocal(cfg, instances)
	}
	kind, ok := localKinds[cfg.Policy]
	if !ok {
		return nil, fmt.Errorf("bucket: unknown local policy %q (known: %v)", cfg.Policy, LocalPolicies())
	}
	if instances < 1 {
		return nil, fmt.Errorf("bucket: local policy %s needs at least one instance, got %d", cfg.Policy, instances)
	}
	if cfg.PrefixK == 0 {
		cfg.PrefixK = DefaultPrefixK
	}
	if cfg.OverloadFactor == 0 {
		cfg.OverloadFactor = DefaultOverloadFactor
	}
	for _, w := range []struct {
		name string
		v    float64
	}{{"LoadAlpha", cfg.LoadAlpha}, {"ScoreAlpha", cfg.ScoreAlpha}, {"ScoreBeta", cfg.ScoreBeta}, {"KVC.Alpha", cfg.KVC.Alpha}} {
		if !(w.v >= 0) || math.IsInf(w.v, 0) {
			return nil, fmt.Errorf("bucket: %s must be finite and >= 0, got %v", w.name, w.v)
		}
	}
	switch {
	case cfg.MetaStoreTTL < 0 || cfg.ProbeLatency < 0:
		return nil, fmt.Errorf("bucket: MetaStoreTTL and ProbeLatency must be >= 0, got %v and %v", cfg.MetaStoreTTL, cfg.ProbeLatency)
	case cfg.ProbeTopK < 0 || cfg.PrefixK < 0 || cfg.FanOut < 0:
		return nil, fmt.Errorf("bucket: ProbeTopK, PrefixK and FanOut must be >= 0, got %d, %d and %d", cfg.ProbeTopK, cfg.PrefixK, cfg.FanOut)
	case !(cfg.OverloadFactor >= 1) || math.IsInf(cfg.OverloadFactor, 0):
		return nil, fmt.Errorf("bucket: OverloadFactor must be finite and >= 1, got %v", cfg.OverloadFactor)
	}
	return &local{
		name:     cfg.Policy,
		kind:     kind,
		cfg:      cfg,
		n:        instances,
		store:    newMetaStore(instances, cfg.MetaStoreTTL),
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^golden)),
		inflight: make([]int, instances),
		assigned: make([]int64, instances),
		last:     make(map[int32]int32),
		hints:    make(map[hintKey][]int32),
		pre:      make([]int, instances),
		order:    make([]int32, instances),
	}, nil
}

type hintKey struct{ inst, session int32 }

func (l *local) Name() string { return l.name }

func (l *local) Routed(r *workload.Request, instance int, now time.Duration) {
	if instance < 0 || instance >= l.n {
		return
	}
	if l.store.ttl > 0 {
		k := hintKey{int32(instance), r.Session}
		h := l.store.recordHinted(instance, r.Blocks, now, l.hints[k])
		if r.Last { // the session ends: nothing to hint any more
			for i := range l.n {
				delete(l.hints, hintKey{int32(i), r.Session})
			}
		} else {
			l.hints[k] = h
		}
	} else {
		l.store.record(instance, r.Blocks, now)
	}
	l.inflight[instance]++
	l.assigned[instance]++
	l.last[r.Session] = int32(instance)
}

func (l *local) Evicted(instance int, blocks []uint64, _ time.Duration) {
	if instance < 0 || instance >= l.n {
		return
	}
	l.store.evict(instance, blocks)
}

func (l *local) PredictPrefix(r *workload.Request, now time.Duration) int {
	return l.store.longestAny(r.Blocks, now)
}

func (l *local) Finished(instance int, _ time.Duration) {
	if instance >= 0 && instance < l.n && l.inflight[instance] > 0 {
		l.inflight[instance]--
	}
}

// argmax returns the candidate with the highest Score among those ok
// accepts (nil: all), ties to the lower load, then the lower index; -1 when
// ok accepts none.
func argmax(c []InstanceCandidate, ok func(int) bool) int {
	best := -1
	for i := range c {
		if ok != nil && !ok(i) {
			continue
		}
		if best < 0 || c[i].Score > c[best].Score ||
			(c[i].Score == c[best].Score && c[i].View.Load() < c[best].View.Load()) {
			best = i
		}
	}
	return best
}

func (l *local) Route(r *workload.Request, inst []InstanceView, probe Prober, now time.Duration) LocalDecision {
	d := LocalDecision{Instance: -1, Mode: l.name}
	if len(inst) != l.n {
		d.Reason = fmt.Sprintf("%s: got %d, want %d", ReasonViewsMismatch, len(inst), l.n)
		return d
	}
	pre := l.pre
	l.store.prefixes(r.Blocks, now, pre)
	c := make([]InstanceCandidate, l.n)
	for i := range c {
		c[i] = InstanceCandidate{View: inst[i], PredictedPrefix: pre[i]}
	}
	d.Candidates = c
	nb := len(r.Blocks)
	best, reason := -1, ReasonBest

	switch l.kind {
	case lRandom:
		best, reason = l.rng.IntN(l.n), ReasonRandom

	case lRoundRobin:
		best, reason = l.rr%l.n, ReasonRoundRobin
		l.rr = (l.rr + 1) % l.n

	case lLeastLoaded:
		for i := range c {
			c[i].Score = -float64(inst[i].Load())
		}
		best = argmax(c, nil)

	case lLeastTokens:
		for i := range c {
			c[i].Score = -float64(inst[i].KVUsed + inst[i].QueuedPrefillTokens)
		}
		best = argmax(c, nil)

	case lCacheScore:
		for i := range c {
			c[i].Score = l.cfg.ScoreAlpha*float64(pre[i]) - l.cfg.ScoreBeta*float64(inst[i].Load())
		}
		best = argmax(c, nil)

	case lTTLAware:
		for i := range c {
			c[i].Score = float64(pre[i])
		}
		best = argmax(c, nil)

	case lCacheLoad:
		for i := range c {
			frac := 0.0
			if nb > 0 {
				frac = float64(pre[i]) / float64(nb)
			}
			c[i].Score = frac - l.cfg.LoadAlpha*float64(inst[i].Load())
		}
		best = argmax(c, nil)

	case lEstimatedTTFT:
		best, reason = l.estimatedTTFT(r, c)

	case lPrecise:
		best, reason = l.precise(r, c, probe, &d)

	case lPrefixAffinity:
		best, reason = l.affinity(r, c)

	case lCacheAffinity:
		best, reason = l.cacheAffinity(r, c)

	case lKVC:
		best, reason = l.kvc(r, c)
	}

	d.Instance, d.Reason = best, reason
	if best >= 0 {
		d.PredictedPrefix = pre[best]
		if c[best].Probed {
			d.PredictedPrefix = int(c[best].Score)
		}
	}
	return d
}

// estimatedTTFT scores −(QueuedPrefillTokens + uncached)/PrefillRate
// seconds, uncached = InputLen − cached tokens predicted (at least one
// token is always prefilled, as on gpu.FusedWorker).
func (l *local) estimatedTTFT(r *workload.Request, c []InstanceCandidate) (int, string) {
	anyRate := false
	for i := range c {
		v := c[i].View
		if !(v.PrefillRate > 0) || math.IsInf(v.PrefillRate, 0) {
			c[i].Score = -math.MaxFloat64
			continue
		}
		anyRate = true
		cached := 0
		if r.BlockTokens > 0 {
			cached = min(c[i].PredictedPrefix*r.BlockTokens, r.InputLen-1)
		}
		uncached := float64(r.InputLen - max(cached, 0))
		c[i].Score = -(float64(v.QueuedPrefillTokens) + uncached) / v.PrefillRate
	}
	if !anyRate {
		for i := range c {
			c[i].Score = -float64(c[i].View.Load())
		}
		return argmax(c, nil), ReasonNoRate
	}
	return argmax(c, nil), ReasonBest
}

// rank orders l.order by key descending, ties by lower load then lower
// index, and returns it. n is small: insertion sort, no allocation.
func (l *local) rank(c []InstanceCandidate, key func(i int) float64) []int32 {
	o := l.order
	for i := range o {
		o[i] = int32(i)
	}
	less := func(a, b int32) bool { // a ranks before b
		ka, kb := key(int(a)), key(int(b))
		if ka != kb {
			return ka > kb
		}
		if la, lb := c[a].View.Load(), c[b].View.Load(); la != lb {
			return la < lb
		}
		return a < b
	}
	for i := 1; i < len(o); i++ {
		for j := i; j > 0 && less(o[j], o[j-1]); j-- {
			o[j], o[j-1] = o[j-1], o[j]
		}
	}
	return o
}

// precise probes the meta-store's top ProbeTopK instances (by predicted
// prefix, ties to lower load then index) and picks the longest real
// prefix, ties to lower load then index. Each probe costs ProbeLatency.
func (l *local) precise(r *workload.Request, c []InstanceCandidate, probe Prober, d *LocalDecision) (int, string) {
	switch {
	case len(r.Blocks) == 0:
		for i := range c {
			c[i].Score = -float64(c[i].View.Load())
		}
		return argmax(c, nil), ReasonNoBlocks
	case probe == nil:
		for i := range c {
			c[i].Score = float64(c[i].PredictedPrefix)
		}
		return argmax(c, nil), ReasonNoProber
	}
	k := l.cfg.ProbeTopK
	if k <= 0 || k > l.n {
		k = l.n
	}
	order := l.rank(c, func(i int) float64 { return float64(c[i].PredictedPrefix) })
	for i := range c {
		c[i].Score = -1 // not probed: out of the race
	}
	for _, i := range order[:k] {
		real := min(max(probe.CachedPrefix(int(i), r.Blocks), 0), len(r.Blocks))
		c[i].Score, c[i].Probed = float64(real), true
		d.ProbeLatency += l.cfg.ProbeLatency
	}
	return argmax(c, func(i int) bool { return c[i].Probed }), ReasonProbed
}

package bucket

import (
	"time"

	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/workload"
)

// PolicyCacheAwareDP is the SGLang-style cache-aware data-parallel router
// (policy.CacheAwareDP) as a local policy, so that the "4-way DP"
// baseline runs on the same fused-worker runtime as the bucket policies.
const PolicyCacheAwareDP = "cache_aware_dp"

// cacheAwareLocal adapts policy.CacheAwareDP to Local. Its own resident
// index (what it routed where, per session) is its meta-store. Unlike the
// other local policies its Route commits the decision (CacheAwareDP picks,
// counts the load and records in one step); Routed records the request's
// blocks on the given instance again (idempotent after Route, and what
// records a placement made without Route). Evicted block notices are
// ignored: the
// policy tracks sessions, not blocks, as SGLang's approximate tree does
// (it is only trimmed by its own size cap there).
type cacheAwareLocal struct {
	p       *policy.CacheAwareDP
	n       int
	longest []int
}

func newCacheAwareLocal(cfg LocalConfig, instances int) (Local, error) {
	c := policy.DefaultCacheAwareConfig(instances)
	if cfg.CacheThreshold != nil {
		c.CacheThreshold = *cfg.CacheThreshold
	}
	if cfg.BalanceAbs != nil {
		c.BalanceAbs = *cfg.BalanceAbs
	}
	if cfg.BalanceRel != nil {
		c.BalanceRel = *cfg.BalanceRel
	}
	miss, err := policy.ParseMissRule(cfg.MissRule)
	if err != nil {
		return nil, err
	}
	c.Miss, c.StrictMatch = miss, !cfg.InclusiveMatch
	p, err := policy.NewCacheAwareDP(c)
	if err != nil {
		return nil, err
	}
	return &cacheAwareLocal{p: p, n: instances, longest: make([]int, instances)}, nil
}

func (l *cacheAwareLocal) Name() string { return PolicyCacheAwareDP }

func (l *cacheAwareLocal) Route(r *workload.Request, inst []InstanceView, _ Prober, _ time.Duration) LocalDecision {
	if len(inst) != l.n {
		return LocalDecision{Instance: -1, Mode: PolicyCacheAwareDP, Reason: "instance views do not match the pool"}
	}
	// The match is computed once, for the candidates' scores and the pick
	// (Begin computed it again; BeginMatched records r as Begin did the
	// copy of r it was given, which was never a last turn).
	l.p.LongestPrefix(r, l.longest)
	before := l.p.Stats()
	d := l.p.BeginMatched(r, l.longest)
	after := l.p.Stats()
	reason := "cache-hit"
	switch {
	case after.Balance > before.Balance:
		reason = "balance"
	case after.Miss > before.Miss:
		reason = "miss"
	}
	cands := make([]InstanceCandidate, len(inst))
	for i, v := range inst {
		// Score: the recorded prefix; load is in the view.
		cands[i] = InstanceCandidate{View: v, Score: float64(l.longest[i]), PredictedPrefix: l.longest[i]}
	}
	return LocalDecision{Instance: d, Mode: PolicyCacheAwareDP, Reason: reason, Candidates: cands,
		PredictedPrefix: l.longest[d]}
}

func (l *cacheAwareLocal) Routed(r *workload.Request, instance int, _ time.Duration) {
	l.p.Record(instance, r)
}
func (l *cacheAwareLocal) Evicted(int, []uint64, time.Duration)   {}
func (l *cacheAwareLocal) IgnoresEvictedBlocks()                  {}
func (l *cacheAwareLocal) Finished(instance int, _ time.Duration) { l.p.Finished(instance) }

func (l *cacheAwareLocal) PredictPrefix(r *workload.Request, _ time.Duration) int {
	l.p.LongestPrefix(r, l.longest)
	best := 0
	for _, v := range l.longest {
		best = max(best, v)
	}
	return best
}

// The local router's affinity strategies: session, cache and KVC (see
// local.go for the router and its other strategies).

package bucket

import "github.com/pdemu/pdemu/workload"

// affinity is prefix_affinity: score = the instance's rendezvous weight
// for the hash of the first PrefixK blocks; the highest weight is home.
// With FanOut > 1 the least loaded of the FanOut highest weights wins
// (ties to the higher weight).
func (l *local) affinity(r *workload.Request, c []InstanceCandidate) (int, string) {
	key := affinityKey(r, l.cfg.PrefixK)
	for i := range c {
		c[i].Score = unit(hrwWeight(key, i))
	}
	home := 0
	for i := range c {
		if hrwWeight(key, i) > hrwWeight(key, home) {
			home = i
		}
	}
	if l.cfg.FanOut <= 1 {
		return home, ReasonHome
	}
	f := min(l.cfg.FanOut, l.n)
	// Weights are distinct with overwhelming probability; rank breaks any
	// tie by load then index.
	order := l.rank(c, func(i int) float64 { return c[i].Score })
	best := order[0]
	for _, i := range order[1:f] {
		if c[i].View.Load() < c[best].View.Load() {
			best = i
		}
	}
	if int(best) == home {
		return home, ReasonHome
	}
	return int(best), ReasonFanOut
}

// cacheAffinity: start from prefix_affinity's choice (home, or its fan-out
// pick); move to the instance with the longest predicted prefix when that
// is strictly longer than the choice's; if the result is overloaded
// (load > OverloadFactor × max(mean load, 1)), take the longest predicted
// prefix among the instances that are not, ties to lower load then index.
// Score = predicted prefix (blocks).
func (l *local) cacheAffinity(r *workload.Request, c []InstanceCandidate) (int, string) {
	pick, reason := l.affinity(r, c)
	for i := range c {
		c[i].Score = float64(c[i].PredictedPrefix)
	}
	if longest := argmax(c, nil); c[longest].PredictedPrefix > c[pick].PredictedPrefix {
		pick, reason = longest, ReasonLongerPrefix
	}
	total := 0
	for i := range c {
		total += c[i].View.Load()
	}
	limit := l.cfg.OverloadFactor * max(float64(total)/float64(len(c)), 1)
	over := func(i int) bool { return float64(c[i].View.Load()) > limit }
	if !over(pick) {
		return pick, reason
	}
	// The least loaded instance is never overloaded (its load is at most
	// the mean, and OverloadFactor >= 1), so this finds one.
	return argmax(c, func(i int) bool { return !over(i) }), ReasonOverloaded
}

// kvc is KVC Algorithm 1's scoring over the bucket's meta-store, without
// admission: the lexicographic maximum of (overlap + α·sticky, sticky,
// −inflight, −assigned), ties to the lower index, where overlap is the
// predicted prefix in blocks (equal to |blocks(r) ∩ resident(i)| under
// prefix closure), sticky = 1 on the session's last instance, and
// inflight/assigned count Routed calls (minus Finished calls).
func (l *local) kvc(r *workload.Request, c []InstanceCandidate) (int, string) {
	sticky := int32(-1)
	if s, ok := l.last[r.Session]; ok {
		sticky = s
	}
	st := func(i int) int {
		if int32(i) == sticky {
			return 1
		}
		return 0
	}
	best := -1
	for i := range c {
		c[i].Score = float64(c[i].PredictedPrefix) + l.cfg.KVC.Alpha*float64(st(i))
		if best < 0 {
			best = i
			continue
		}
		switch {
		case c[i].Score != c[best].Score:
			if c[i].Score > c[best].Score {
				best = i
			}
		case st(i) != st(best):
			if st(i) > st(best) {
				best = i
			}
		case l.inflight[i] != l.inflight[best]:
			if l.inflight[i] < l.inflight[best] {
				best = i
			}
		case l.assigned[i] < l.assigned[best]:
			best = i
		}
	}
	if int32(best) == sticky {
		return best, ReasonSticky
	}
	return best, ReasonBest
}

package bucket

import (
	"math"
	"testing"
	"time"

	"github.com/pdemu/pdemu/workload"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func newLocal(t testing.TB, cfg LocalConfig, n int) Local {
	t.Helper()
	l, err := NewLocal(cfg, n)
	require.NoError(t, err)
	return l
}

// loads builds instance views with the given Queue+Running loads (all in
// Queue).
func loads(ls ...int) []InstanceView {
	v := make([]InstanceView, len(ls))
	for i, l := range ls {
		v[i] = InstanceView{Index: i, Queue: l, KVTotal: 100000, PrefillRate: 10000}
	}
	return v
}

// mapProber answers CachedPrefix from a table.
type mapProber map[int]int

func (p mapProber) CachedPrefix(i int, blocks []uint64) int { return min(p[i], len(blocks)) }

// countingProber counts probes.
type countingProber struct {
	mapProber
	probed []int
}

func (p *countingProber) CachedPrefix(i int, blocks []uint64) int {
	p.probed = append(p.probed, i)
	return p.mapProber.CachedPrefix(i, blocks)
}

func scores(d LocalDecision) []float64 {
	s := make([]float64, len(d.Candidates))
	for i, c := range d.Candidates {
		s[i] = c.Score
	}
	return s
}

func preds(d LocalDecision) []int {
	s := make([]int, len(d.Candidates))
	for i, c := range d.Candidates {
		s[i] = c.PredictedPrefix
	}
	return s
}

// seed records, for every instance i, the first prefix[i] blocks of r.
func seed(l Local, r *workload.Request, now time.Duration, prefix ...int) {
	for i, p := range prefix {
		if p > 0 {
			rr := *r
			rr.Blocks = r.Blocks[:p]
			rr.Session = -1 - int32(i)
			l.Routed(&rr, i, now)
		}
	}
}

func TestLocalPolicies(t *testing.T) {
	assert.Equal(t, []string{
		"cache_affinity", "cache_aware_dp", "cache_load", "cache_score", "estimated_ttft", "kvc", "least_loaded",
		"least_tokens", "precise", "prefix_affinity", "random", "round_robin", "ttl_aware",
	}, LocalPolicies())
	for _, p := range LocalPolicies() {
		l := newLocal(t, LocalConfig{Policy: p}, 3)
		assert.Equal(t, p, l.Name())
		d := l.Route(req(1000, 4), loads(0, 0, 0), mapProber{}, 0)
		assert.Equal(t, p, d.Mode)
		assert.GreaterOrEqual(t, d.Instance, 0)
		assert.Len(t, d.Candidates, 3)
		for _, c := range d.Candidates {
			assert.False(t, math.IsInf(c.Score, 0) || math.IsNaN(c.Score), "%s: scores must be JSON-safe", p)
		}
	}
}

func TestNewLocalErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  LocalConfig
		n    int
		want string
	}{
		{"unknown", LocalConfig{Policy: "least_load"}, 2, "unknown local policy"},
		{"no instances", LocalConfig{Policy: PolicyRandom}, 0, "at least one instance"},
		{"negative alpha", LocalConfig{Policy: PolicyCacheLoad, LoadAlpha: -1}, 2, "LoadAlpha"},
		{"NaN beta", LocalConfig{Policy: PolicyCacheScore, ScoreBeta: math.NaN()}, 2, "ScoreBeta"},
		{"infinite kvc alpha", LocalConfig{Policy: PolicyKVC, KVC: KVCConfig{Alpha: math.Inf(1)}}, 2, "KVC.Alpha"},
		{"negative ttl", LocalConfig{Policy: PolicyTTLAware, MetaStoreTTL: -time.Second}, 2, "MetaStoreTTL"},
		{"negative probe latency", LocalConfig{Policy: PolicyPrecise, ProbeLatency: -1}, 2, "ProbeLatency"},
		{"negative topk", LocalConfig{Policy: PolicyPrecise, ProbeTopK: -1}, 2, "ProbeTopK"},
		{"negative fan-out", LocalConfig{Policy: PolicyPrefixAffinity, FanOut: -1}, 2, "FanOut"},
		{"overload factor below 1", LocalConfig{Policy: PolicyCacheAffinity, OverloadFactor: 0.5}, 2, "OverloadFactor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewLocal(tc.cfg, tc.n)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestViewsMismatch(t *testing.T) {
	l := newLocal(t, LocalConfig{Policy: PolicyLeastLoaded}, 3)
	d := l.Route(req(10, 1), loads(0, 0), nil, 0)
	assert.Equal(t, -1, d.Instance)
	assert.Contains(t, d.Reason, ReasonViewsMismatch)
}

func TestRandom(t *testing.T) {
	pick := func(seed uint64) []int {
		l := newLocal(t, LocalConfig{Policy: PolicyRandom, Seed: seed}, 4)
		var out []int
		for range 200 {
			d := l.Route(req(10, 1), loads(0, 0, 0, 0), nil, 0)
			require.Equal(t, ReasonRandom, d.Reason)
			out = append(out, d.Instance)
		}
		return out
	}
	a := pick(42)
	assert.Equal(t, a, pick(42), "seeded")
	assert.NotEqual(t, a, pick(43))
	count := map[int]int{}
	for _, i := range a {
		count[i]++
	}
	for i := range 4 {
		assert.Greater(t, count[i], 25, "instance %d drawn %d/200 times", i, count[i])
	}
}

func TestRoundRobin(t *testing.T) {
	l := newLocal(t, LocalConfig{Policy: PolicyRoundRobin}, 3)
	var got []int
	for range 7 {
		d := l.Route(req(10, 1), loads(9, 0, 5), nil, 0)
		got = append(got, d.Instance)
	}
	assert.Equal(t, []int{0, 1, 2, 0, 1, 2, 0}, got)
}

func TestLeastLoaded(t *testing.T) {
	l := newLocal(t, LocalConfig{Policy: PolicyLeastLoaded}, 4)
	v := loads(3, 1, 1, 2)
	v[2].Queue, v[2].Running = 0, 1 // load = Queue + Running
	d := l.Route(req(10, 1), v, nil, 0)
	assert.Equal(t, 1, d.Instance, "ties go to the lower index")
	assert.Equal(t, []float64{-3, -1, -1, -2}, scores(d))
	assert.Equal(t, ReasonBest, d.Reason)
}

func TestLeastTokens(t *testing.T) {
	l := newLocal(t, LocalConfig{Policy: PolicyLeastTokens}, 3)
	v := loads(0, 5, 1)
	v[0].KVUsed, v[0].QueuedPrefillTokens = 5000, 1000
	v[1].KVUsed, v[1].QueuedPrefillTokens = 1000, 2000
	v[2].KVUsed, v[2].QueuedPrefillTokens = 3000, 0
	d := l.Route(req(10, 1), v, nil, 0)
	assert.Equal(t, []float64{-6000, -3000, -3000}, scores(d))
	assert.Equal(t, 2, d.Instance, "ties go to the lower load")
}

func TestCacheScore(t *testing.T) {
	r := req(1600, 100)
	for _, tc := range []struct {
		beta float64
		want int
	}{{0.1, 0}, {2, 1}} {
		l := newLocal(t, LocalConfig{Policy: PolicyCacheScore, ScoreAlpha: 1, ScoreBeta: tc.beta}, 3)
		seed(l, r, 0, 10, 4, 0)
		d := l.Route(r, loads(5, 0, 0), nil, time.Second)
		assert.Equal(t, []int{10, 4, 0}, preds(d))
		assert.InDeltaSlice(t, []float64{10 - tc.beta*5, 4, 0}, scores(d), 1e-12)
		assert.Equal(t, tc.want, d.Instance, "beta %v", tc.beta)
		assert.Equal(t, []int{10, 4, 0}[tc.want], d.PredictedPrefix)
	}
}

func TestTTLAware(t *testing.T) {
	const ttl = 100 * time.Second
	l := newLocal(t, LocalConfig{Policy: PolicyTTLAware, MetaStoreTTL: ttl}, 3)
	r := req(1600, 100)
	seed(l, r, 0, 50, 0, 0)             // long prefix, recorded early
	seed(l, r, 60*time.Second, 0, 0, 8) // short prefix, recorded late
	d := l.Route(r, loads(9, 0, 9), nil, 99*time.Second)
	assert.Equal(t, 0, d.Instance, "the longest live prefix wins whatever the load")
	assert.Equal(t, []int{50, 0, 8}, preds(d))

	d = l.Route(r, loads(9, 0, 9), nil, ttl)
	assert.Equal(t, 2, d.Instance, "instance 0's entries expired at the TTL")
	assert.Equal(t, []int{0, 0, 8}, preds(d))
	assert.Equal(t, 8, l.PredictPrefix(r, ttl))

	d = l.Route(r, loads(9, 0, 9), nil, 160*time.Second)
	assert.Equal(t, 1, d.Instance, "nothing live: the least loaded")
	assert.Equal(t, 0, l.PredictPrefix(r, 160*time.Second))

	// Ties on the prefix go to the lower load.
	seed(l, r, 200*time.Second, 5, 5, 5)
	d = l.Route(r, loads(2, 1, 1), nil, 200*time.Second)
	assert.Equal(t, 1, d.Instance)
}

func TestPrecise(t *testing.T) {
	r := req(1600, 100)
	cfg := LocalConfig{Policy: PolicyPrecise, ProbeLatency: 10 * time.Microsecond, ProbeTopK: 2}
	l := newLocal(t, cfg, 4)
	seed(l, r, 0, 10, 5, 0, 0) // meta-store: 10, 5, 0, 0
	probe := &countingProber{mapProber: mapProber{0: 2, 1: 5, 2: 9}}

	d := l.Route(r, loads(0, 3, 0, 0), probe, time.Second)
	assert.Equal(t, []int{0, 1}, probe.probed, "the meta-store's top 2")
	assert.Equal(t, 20*time.Microsecond, d.ProbeLatency, "one ProbeLatency per probe")
	assert.Equal(t, 1, d.Instance, "the longest real prefix among the probed")
	assert.Equal(t, 5, d.PredictedPrefix, "the probed prefix")
	assert.Equal(t, ReasonProbed, d.Reason)
	assert.Equal(t, []float64{2, 5, -1, -1}, scores(d))
	assert.Equal(t, []bool{true, true, false, false}, []bool{d.Candidates[0].Probed, d.Candidates[1].Probed, d.Candidates[2].Probed, d.Candidates[3].Probed})

	// Top-K ties on the prediction go to the lower load.
	l2 := newLocal(t, cfg, 4)
	probe.probed = nil
	d = l2.Route(r, loads(3, 2, 0, 1), probe, 0)
	assert.Equal(t, []int{2, 3}, probe.probed)
	assert.Equal(t, 2, d.Instance)

	// ProbeTopK 0 probes every instance.
	cfg.ProbeTopK = 0
	l3 := newLocal(t, cfg, 4)
	seed(l3, r, 0, 10, 5, 0, 0)
	probe.probed = nil
	d = l3.Route(r, loads(0, 0, 0, 0), probe, 0)
	assert.Equal(t, []int{0, 1, 2, 3}, probe.probed)
	assert.Equal(t, 40*time.Microsecond, d.ProbeLatency)
	assert.Equal(t, 2, d.Instance)
	assert.Equal(t, 9, d.PredictedPrefix)

	// Without a prober: the meta-store's prediction, no latency.
	d = l3.Route(r, loads(0, 0, 0, 0), nil, 0)
	assert.Equal(t, 0, d.Instance)
	assert.Equal(t, ReasonNoProber, d.Reason)
	assert.Zero(t, d.ProbeLatency)

	// Nothing to probe: least loaded, no latency.
	probe.probed = nil
	d = l3.Route(&workload.Request{InputLen: 10}, loads(2, 1, 3, 1), probe, 0)
	assert.Equal(t, 1, d.Instance)
	assert.Equal(t, ReasonNoBlocks, d.Reason)
	assert.Empty(t, probe.probed)
	assert.Zero(t, d.ProbeLatency)
}

func TestCacheLoad(t *testing.T) {
	r := req(1600, 100)
	l := newLocal(t, LocalConfig{Policy: PolicyCacheLoad, LoadAlpha: 0.1}, 3)
	seed(l, r, 0, 80, 20, 0)
	d := l.Route(r, loads(4, 0, 0), nil, 0)
	assert.InDeltaSlice(t, []float64{0.8 - 0.4, 0.2, 0}, scores(d), 1e-12)
	assert.Equal(t, 0, d.Instance)
	d = l.Route(r, loads(7, 0, 0), nil, 0)
	assert.Equal(t, 1, d.Instance, "0.8 − 0.7 < 0.2")

	// No blocks: pure load.
	d = l.Route(&workload.Request{InputLen: 5}, loads(1, 2, 0), nil, 0)
	assert.Equal(t, 2, d.Instance)
}

func TestEstimatedTTFT(t *testing.T) {
	r := req(1600, 100) // 100 blocks of 16 tokens
	l := newLocal(t, LocalConfig{Policy: PolicyEstimatedTTFT}, 3)
	seed(l, r, 0, 100, 50, 0)
	v := loads(0, 0, 0)
	v[0].QueuedPrefillTokens, v[0].PrefillRate = 20000, 10000
	v[1].QueuedPrefillTokens, v[1].PrefillRate = 1000, 10000
	v[2].QueuedPrefillTokens, v[2].PrefillRate = 0, 20000
	d := l.Route(r, v, nil, 0)
	want := []float64{
		-(20000 + 1.0) / 10000, // fully cached: one token is still prefilled
		-(1000 + 800.0) / 10000,
		-(0 + 1600.0) / 20000,
	}
	assert.InDeltaSlice(t, want, scores(d), 1e-12)
	assert.Equal(t, 2, d.Instance)

	// An instance without a rate loses; with none, the least loaded wins.
	v[2].PrefillRate = 0
	d = l.Route(r, v, nil, 0)
	assert.Equal(t, 1, d.Instance)
	assert.Equal(t, -math.MaxFloat64, d.Candidates[2].Score)
	v = loads(3, 1, 2)
	for i := range v {
		v[i].PrefillRate = 0
	}
	d = l.Route(r, v, nil, 0)
	assert.Equal(t, 1, d.Instance)
	assert.Equal(t, ReasonNoRate, d.Reason)
}

func TestPrefixAffinity(t *testing.T) {
	const n = 5
	l := newLocal(t, LocalConfig{Policy: PolicyPrefixAffinity, PrefixK: 4}, n)
	home := func(r *workload.Request) int { return l.Route(r, loads(0, 0, 0, 0, 0), nil, 0).Instance }

	// The home depends on the first PrefixK blocks only.
	a := &workload.Request{InputLen: 160, BlockTokens: 16, Blocks: chain(1, 10)}
	b := &workload.Request{InputLen: 320, BlockTokens: 16, Blocks: append(append([]uint64(nil), a.Blocks[:4]...), chain(9, 16)...)}
	assert.Equal(t, home(a), home(b))
	d := l.Route(a, loads(9, 9, 9, 9, 9), nil, 0)
	assert.Equal(t, home(a), d.Instance, "load does not move the home")
	assert.Equal(t, ReasonHome, d.Reason)

	// The home is the highest rendezvous weight, which Score reports.
	key := affinityKey(a, 4)
	best := 0
	for i := range n {
		assert.Equal(t, unit(hrwWeight(key, i)), d.Candidates[i].Score)
		if hrwWeight(key, i) > hrwWeight(key, best) {
			best = i
		}
	}
	assert.Equal(t, best, d.Instance)

	// Homes spread over the instances.
	count := make([]int, n)
	for s := range 1000 {
		count[home(&workload.Request{InputLen: 64, BlockTokens: 16, Blocks: chain(uint64(s), 4)})]++
	}
	for i, c := range count {
		assert.Greater(t, c, 120, "instance %d is home to %d/1000 prefixes", i, c)
	}

	// Without blocks the session is the key.
	s1 := &workload.Request{Session: 3}
	assert.Equal(t, home(s1), home(&workload.Request{Session: 3, InputLen: 99}))

	// Fan-out: the least loaded of the top FanOut weights.
	lf := newLocal(t, LocalConfig{Policy: PolicyPrefixAffinity, PrefixK: 4, FanOut: 2}, n)
	order := make([]int, 0, n)
	for len(order) < n {
		next := -1
		for i := range n {
			if !contains(order, i) && (next < 0 || hrwWeight(key, i) > hrwWeight(key, next)) {
				next = i
			}
		}
		order = append(order, next)
	}
	v := loads(5, 5, 5, 5, 5)
	v[order[1]].Queue = 1
	v[order[2]].Queue = 0 // outside the fan-out
	d = lf.Route(a, v, nil, 0)
	assert.Equal(t, order[1], d.Instance)
	assert.Equal(t, ReasonFanOut, d.Reason)
	v[order[0]].Queue = 1 // tie: the higher weight
	d = lf.Route(a, v, nil, 0)
	assert.Equal(t, order[0], d.Instance)
	assert.Equal(t, ReasonHome, d.Reason)
}

func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func TestCacheAffinity(t *testing.T) {
	const n = 4
	cfg := LocalConfig{Policy: PolicyCacheAffinity, PrefixK: 8}
	r := req(1600, 100)
	homeOf := func() int {
		l := newLocal(t, LocalConfig{Policy: PolicyPrefixAffinity, PrefixK: 8}, n)
		return l.Route(r, loads(0, 0, 0, 0), nil, 0).Instance
	}
	home := homeOf()
	other := (home + 1) % n
	// seeded is a router of cfg whose home and other instances hold the
	// first homeP and otherP blocks of r.
	seeded := func(t *testing.T, cfg LocalConfig, homeP, otherP int) Local {
		l := newLocal(t, cfg, n)
		p := make([]int, n)
		p[home], p[other] = homeP, otherP
		seed(l, r, 0, p...)
		return l
	}

	t.Run("home", func(t *testing.T) {
		l := newLocal(t, cfg, n)
		d := l.Route(r, loads(1, 1, 1, 1), nil, 0)
		assert.Equal(t, home, d.Instance)
		assert.Equal(t, ReasonHome, d.Reason)
	})
	t.Run("home keeps an equal prefix", func(t *testing.T) {
		d := seeded(t, cfg, 30, 30).Route(r, loads(1, 1, 1, 1), nil, 0)
		assert.Equal(t, home, d.Instance)
	})
	t.Run("longer prefix elsewhere", func(t *testing.T) {
		d := seeded(t, cfg, 10, 30).Route(r, loads(1, 1, 1, 1), nil, 0)
		assert.Equal(t, other, d.Instance)
		assert.Equal(t, ReasonLongerPrefix, d.Reason)
		assert.Equal(t, 30, d.PredictedPrefix)
		assert.Equal(t, float64(30), d.Candidates[other].Score)
	})
	t.Run("overloaded home", func(t *testing.T) {
		l := seeded(t, cfg, 30, 10)
		v := loads(1, 1, 1, 1)
		v[home].Queue = 9 // mean 3, 9 > 2·3
		d := l.Route(r, v, nil, 0)
		assert.Equal(t, other, d.Instance, "the longest prefix among the others")
		assert.Equal(t, ReasonOverloaded, d.Reason)

		v[home].Queue = 8 // mean 2.75, 8 > 5.5 still; factor 3: 8 < 8.25
		l3 := seeded(t, LocalConfig{Policy: PolicyCacheAffinity, PrefixK: 8, OverloadFactor: 3}, 30, 10)
		assert.Equal(t, home, l3.Route(r, v, nil, 0).Instance)
	})
	t.Run("light load is not overload", func(t *testing.T) {
		l := newLocal(t, cfg, n)
		v := loads(0, 0, 0, 0)
		v[home].Queue = 2 // mean 0.5: the limit is 2 × max(0.5, 1) = 2
		d := l.Route(r, v, nil, 0)
		assert.Equal(t, home, d.Instance)
		v[home].Queue = 3 // mean 0.75, 3 > 2
		d = l.Route(r, v, nil, 0)
		assert.NotEqual(t, home, d.Instance)
		assert.Equal(t, ReasonOverloaded, d.Reason)
	})
}

func TestKVC(t *testing.T) {
	l := newLocal(t, LocalConfig{Policy: PolicyKVC, KVC: KVCConfig{Alpha: 1}}, 3)
	r := req(1600, 100)
	r.Session = 7

	// Cold: everything ties; lowest index.
	d := l.Route(r, loads(0, 0, 0), nil, 0)
	assert.Equal(t, 0, d.Instance)
	l.Routed(r, 0, 0) // session 7 now sticks to 0, inflight[0] = 1

	// A different session avoids the inflight instance.
	r2 := req(1600, 100)
	r2.Blocks, r2.Session = chain(99, 100), 8
	d = l.Route(r2, loads(0, 0, 0), nil, 0)
	assert.Equal(t, 1, d.Instance, "−inflight breaks the tie")
	l.Routed(r2, 1, 0)
	l.Finished(1, 0) // inflight[1] = 0, assigned[1] = 1
	r3 := req(1600, 100)
	r3.Blocks, r3.Session = chain(98, 100), 9
	d = l.Route(r3, loads(0, 0, 0), nil, 0)
	assert.Equal(t, 2, d.Instance, "−assigned breaks the tie")

	// Overlap + α·sticky: the session's instance holds 100 blocks.
	d = l.Route(r, loads(0, 0, 0), nil, 0)
	assert.Equal(t, 0, d.Instance)
	assert.Equal(t, ReasonSticky, d.Reason)
	assert.Equal(t, []float64{101, 0, 0}, scores(d))

	// A longer overlap elsewhere beats the sticky bonus when it is more than α.
	r.Blocks = append(r.Blocks, chain(5, 2)...)
	seed(l, r, 0, 0, 102, 0)
	d = l.Route(r, loads(0, 0, 0), nil, 0)
	assert.Equal(t, []float64{101, 102, 0}, scores(d))
	assert.Equal(t, 1, d.Instance)
	assert.Equal(t, ReasonBest, d.Reason)

	// Equal score: the sticky instance.
	l2 := newLocal(t, LocalConfig{Policy: PolicyKVC, KVC: KVCConfig{Alpha: 1}}, 3)
	r4 := req(1600, 100)
	r4.Session = 3
	l2.Routed(&workload.Request{Session: 3}, 2, 0) // sticky 2, nothing cached
	seed(l2, r4, 0, 1, 0, 0)                       // instance 0: overlap 1
	d = l2.Route(r4, loads(0, 0, 0), nil, 0)
	assert.Equal(t, []float64{1, 0, 1}, scores(d))
	assert.Equal(t, 2, d.Instance, "sticky wins the tie on overlap + α·sticky")
}

// TestIsolation: two buckets' Locals share nothing, so the long bucket
// cannot see what the short bucket recorded.
func TestIsolation(t *testing.T) {
	for _, p := range LocalPolicies() {
		t.Run(p, func(t *testing.T) {
			short := newLocal(t, LocalConfig{Policy: p, Seed: 1}, 3)
			long := newLocal(t, LocalConfig{Policy: p, Seed: 1}, 3)
			r := req(1600, 100)
			for i := range 3 {
				short.Routed(r, i, 0)
			}
			assert.Equal(t, 100, short.PredictPrefix(r, 0))
			assert.Equal(t, 0, long.PredictPrefix(r, 0))
			d := long.Route(r, loads(0, 0, 0), mapProber{}, 0)
			assert.Equal(t, []int{0, 0, 0}, preds(d))
			assert.Zero(t, d.PredictedPrefix)
			ds := short.Route(r, loads(0, 0, 0), mapProber{}, 0)
			assert.Equal(t, []int{100, 100, 100}, preds(ds))

			// Evictions stay local too.
			long.Evicted(0, r.Blocks, 0)
			assert.Equal(t, 100, short.PredictPrefix(r, 0))
		})
	}
}

func TestEvictedUpdatesPrediction(t *testing.T) {
	l := newLocal(t, LocalConfig{Policy: PolicyTTLAware}, 2)
	r := req(1600, 100)
	seed(l, r, 0, 100, 40)
	l.Evicted(0, r.Blocks[30:], 0) // a chain tail, as gpu.BlockLRU evicts
	d := l.Route(r, loads(0, 0), nil, 0)
	assert.Equal(t, []int{30, 40}, preds(d))
	assert.Equal(t, 1, d.Instance)
	assert.Equal(t, 40, l.PredictPrefix(r, 0))
	// Out-of-range instances are ignored.
	l.Evicted(5, r.Blocks, 0)
	l.Routed(r, -1, 0)
	l.Finished(9, 0)
	assert.Equal(t, 40, l.PredictPrefix(r, 0))
}

// TestDeterminism: two Locals fed the same calls make the same decisions,
// for every policy.
func TestDeterminism(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rapid.SampledFrom(LocalPolicies()).Draw(t, "policy")
		n := rapid.IntRange(1, 6).Draw(t, "instances")
		cfg := LocalConfig{
			Policy: p, MetaStoreTTL: 5 * time.Second, ProbeLatency: time.Microsecond, ProbeTopK: 2,
			LoadAlpha: 0.1, ScoreAlpha: 1, ScoreBeta: 0.1, PrefixK: 4, FanOut: rapid.IntRange(0, 3).Draw(t, "fanout"),
			Seed: rapid.Uint64().Draw(t, "seed"), KVC: KVCConfig{Alpha: 1},
		}
		a, err := NewLocal(cfg, n)
		require.NoError(t, err)
		b, err := NewLocal(cfg, n)
		require.NoError(t, err)
		var now time.Duration
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			now += time.Duration(rapid.IntRange(0, 3).Draw(t, "dt")) * time.Second
			r := &workload.Request{
				Session: int32(rapid.IntRange(0, 3).Draw(t, "session")), BlockTokens: 16,
				Blocks: chain(rapid.Uint64Range(0, 3).Draw(t, "root"), rapid.IntRange(0, 30).Draw(t, "len"),
					rapid.SliceOfN(rapid.Uint64Range(0, 1), 0, 8).Draw(t, "choices")...),
			}
			r.InputLen = len(r.Blocks)*16 + 5
			v := make([]InstanceView, n)
			pr := mapProber{}
			for i := range v {
				v[i] = InstanceView{Index: i, Queue: rapid.IntRange(0, 4).Draw(t, "q"), Running: rapid.IntRange(0, 4).Draw(t, "run"),
					KVUsed: int64(rapid.IntRange(0, 1000).Draw(t, "kv")), KVTotal: 1000,
					QueuedPrefillTokens: int64(rapid.IntRange(0, 1000).Draw(t, "qp")), PrefillRate: 1000}
				pr[i] = rapid.IntRange(0, 30).Draw(t, "probe")
			}
			da, db := a.Route(r, v, pr, now), b.Route(r, v, pr, now)
			if !assert.ObjectsAreEqual(da, db) {
				t.Fatalf("decisions differ:\n%+v\n%+v", da, db)
			}
			if da.Instance < 0 || da.Instance >= n {
				t.Fatalf("instance %d out of range", da.Instance)
			}
			if a.PredictPrefix(r, now) != b.PredictPrefix(r, now) {
				t.Fatalf("predictions differ")
			}
			a.Routed(r, da.Instance, now)
			b.Routed(r, db.Instance, now)
			if rapid.Bool().Draw(t, "finish") {
				a.Finished(da.Instance, now)
				b.Finished(da.Instance, now)
			}
			if rapid.Bool().Draw(t, "evict") && len(r.Blocks) > 0 {
				k := rapid.IntRange(0, len(r.Blocks)-1).Draw(t, "tail")
				a.Evicted(da.Instance, r.Blocks[k:], now)
				b.Evicted(da.Instance, r.Blocks[k:], now)
			}
		}
	})
}

package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestVanilla(t *testing.T) {
	_, err := NewVanilla(0, 1)
	require.Error(t, err)
	_, err = NewVanilla(1, 0)
	require.Error(t, err)
	v, err := NewVanilla(2, 3)
	require.NoError(t, err)
	var got []Step
	for i := 0; i < 4; i++ {
		got = append(got, v.Begin(NewDispatch(req(0, i, nil))))
	}
	require.Equal(t, []Step{
		{Action: ActPrefill, P: 0, D: 0, Mode: ModeVanilla, Unadmitted: true},
		{Action: ActPrefill, P: 1, D: 1, Mode: ModeVanilla, Unadmitted: true},
		{Action: ActPrefill, P: 0, D: 2, Mode: ModeVanilla, Unadmitted: true},
		{Action: ActPrefill, P: 1, D: 0, Mode: ModeVanilla, Unadmitted: true},
	}, got)
}

func TestStickyOnly(t *testing.T) {
	_, err := NewStickyOnly(1, 0)
	require.Error(t, err)
	p, err := NewStickyOnly(2, 3)
	require.NoError(t, err)
	// New sessions: round robin over D (and P), Seed.
	for s := int32(0); s < 4; s++ {
		st := p.Begin(NewDispatch(req(s, 0, chainBlocks(s, 3))))
		require.Equal(t, Step{Action: ActPrefill, P: int(s) % 2, D: int(s) % 3, Mode: ModeSeed, Unadmitted: true}, st)
	}
	// Later turns: Direct on the pin, however many.
	for turn := 1; turn < 5; turn++ {
		for s := int32(0); s < 4; s++ {
			st := p.Begin(NewDispatch(req(s, turn, chainBlocks(s, 3+turn))))
			require.Equal(t, Step{Action: ActRun, P: -1, D: int(s) % 3, Mode: ModeDirect, Unadmitted: true}, st)
		}
	}
	// A session first seen mid-way (e.g. a trace starting late) is a Reseed.
	st := p.Begin(NewDispatch(req(9, 4, chainBlocks(9, 3))))
	require.Equal(t, ModeReseed, st.Mode)
	require.Equal(t, 1, st.D, "the round robin continues")
	require.Equal(t, 1, p.Pin(9))
	require.Equal(t, -1, p.Pin(42))
}

func TestKVScoreWalk(t *testing.T) {
	_, err := NewKVScore(KVScoreConfig{Alpha: 1, Prefill: 1, Decode: 0})
	require.Error(t, err)
	p, err := NewKVScore(KVScoreConfig{Alpha: 1, Prefill: 2, Decode: 3})
	require.NoError(t, err)

	st := p.Begin(NewDispatch(req(0, 0, chainBlocks(0, 4))))
	require.Equal(t, Step{Action: ActPrefill, P: 0, D: 0, Mode: ModeSeed, Unadmitted: true}, st)
	st = p.Begin(NewDispatch(req(1, 0, chainBlocks(1, 4))))
	require.Equal(t, Step{Action: ActPrefill, P: 1, D: 1, Mode: ModeSeed, Unadmitted: true}, st, "inflight tie-break")
	// Turn 1 of session 0: overlap + sticky → worker 0, believed resident → Direct.
	st = p.Begin(NewDispatch(req(0, 1, chainBlocks(0, 6))))
	require.Equal(t, Step{Action: ActRun, P: -1, D: 0, Mode: ModeDirect, Unadmitted: true}, st)
	require.Equal(t, 2, p.k.Inflight(0), "no admission: every dispatch counts")
	// Eviction notice: no longer believed resident; the sticky bonus still
	// keeps worker 0, so it is a Reseed there.
	p.Evicted(0, 0)
	st = p.Begin(NewDispatch(req(0, 2, chainBlocks(0, 8))))
	require.Equal(t, Step{Action: ActPrefill, P: 0, D: 0, Mode: ModeReseed, Unadmitted: true}, st, "Direct used no P")
	// Session 1's next turn shares session 0's prefix (a fork): overlap on
	// worker 0 beats its own sticky worker 1 → migration, Seed-like Reseed.
	st = p.Begin(NewDispatch(req(1, 1, chainBlocks(0, 8))))
	require.Equal(t, 0, st.D)
	require.Equal(t, ModeReseed, st.Mode)
	require.Equal(t, 1, p.Stats(1).Migrations)
	require.Equal(t, 0, p.Pin(1))
	p.Finished(1)
	require.Equal(t, 0, p.k.Inflight(1))
	n := 0
	p.Sessions(func(int32, SessionStats) { n++ })
	require.Equal(t, 2, n)
	require.NotNil(t, p.Index())
}

// TestKVScoreIsAlgorithm1WithoutAdmission drives KVScore with random
// requests, completions and evictions next to the reference Route: the
// worker is Algorithm 1's choice (no rejects ever), the mode is Direct iff
// the session was sent there before and no eviction notice came since.
func TestKVScoreIsAlgorithm1WithoutAdmission(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nd := rapid.IntRange(1, 6).Draw(t, "decode")
		alpha := rapid.SampledFrom([]float64{0, 0.5, 1, 3}).Draw(t, "alpha")
		p, err := NewKVScore(KVScoreConfig{Alpha: alpha, Prefill: 2, Decode: nd})
		if err != nil {
			t.Fatal(err)
		}
		ref := newRefIndex(nd)
		pin := map[int32]int{}
		sent := map[[2]int]bool{}
		inflight, assigned := make([]int, nd), make([]int64, nd)
		turn := map[int32]int{}
		var running []int
		for i := rapid.IntRange(1, 100).Draw(t, "steps"); i > 0; i-- {
			switch rapid.IntRange(0, 4).Draw(t, "event") {
			case 0:
				if len(running) > 0 {
					j := rapid.IntRange(0, len(running)-1).Draw(t, "done")
					d := running[j]
					running = append(running[:j], running[j+1:]...)
					p.Finished(d)
					inflight[d]--
				}
			case 1:
				d, s := rapid.IntRange(0, nd-1).Draw(t, "evd"), int32(rapid.IntRange(0, 3).Draw(t, "evs"))
				p.Evicted(d, s)
				ref.Remove(d, s)
				delete(sent, [2]int{int(s), d})
			default:
				s := int32(rapid.IntRange(0, 3).Draw(t, "s"))
				blocks := chainBlocks(s, 2+turn[s]*3)
				if rapid.Bool().Draw(t, "shared") {
					blocks = append(chainBlocks(99, 5), blocks...)
				}
				pn, ok := pin[s]
				if !ok {
					pn = -1
				}
				want := refRoute(ref, refState{alpha: alpha, tau: 1 << 30, pin: pn, rejects: make([]int, nd),
					inflight: inflight, assigned: assigned, tried: make([]bool, nd)}, blocks)
				st := p.Begin(NewDispatch(req(s, turn[s], blocks)))
				if st.D != want {
					t.Fatalf("KVScore chose %d, Algorithm 1 chooses %d", st.D, want)
				}
				wantMode := seedMode(turn[s])
				if sent[[2]int{int(s), want}] {
					wantMode = ModeDirect
				}
				if st.Mode != wantMode || !st.Unadmitted || (st.Mode == ModeDirect) != (st.Action == ActRun) {
					t.Fatalf("step %+v, want mode %v", st, wantMode)
				}
				turn[s]++
				pin[s] = want
				sent[[2]int{int(s), want}] = true
				inflight[want]++
				assigned[want]++
				running = append(running, want)
				ref.Set(want, s, blocks)
			}
		}
	})
}

func TestCacheAwareConfig(t *testing.T) {
	def := DefaultCacheAwareConfig(4)
	require.Equal(t, CacheAwareConfig{Workers: 4, CacheThreshold: 0.3, BalanceAbs: 64, BalanceRel: 1.5, Miss: MissSmallestCache, StrictMatch: true}, def)
	require.Equal(t, CacheAwareConfig{Workers: 4, CacheThreshold: 0.5, BalanceAbs: 32, BalanceRel: 1.0001, Miss: MissSmallestCache, StrictMatch: true}, LegacyCacheAwareConfig(4))
	for name, want := range map[string]MissRule{"": MissSmallestCache, "smallest_tree": MissSmallestCache, "least_loaded": MissLeastLoaded} {
		got, err := ParseMissRule(name)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := ParseMissRule("random")
	require.Error(t, err)
	for _, f := range []func(*CacheAwareConfig){
		func(c *CacheAwareConfig) { c.Workers = 0 },
		func(c *CacheAwareConfig) { c.CacheThreshold = 1.5 },
		func(c *CacheAwareConfig) { c.CacheThreshold = -0.1 },
		func(c *CacheAwareConfig) { c.BalanceAbs = -1 },
		func(c *CacheAwareConfig) { c.BalanceRel = 0.5 },
		func(c *CacheAwareConfig) { c.Miss = 7 },
	} {
		c := def
		f(&c)
		_, err := NewCacheAwareDP(c)
		require.Error(t, err, "%+v", c)
	}
}

// TestCacheAwareDPBranches walks each branch of the rule.
func TestCacheAwareDPBranches(t *testing.T) {
	B := chainBlocks(0, 10)
	cases := []struct {
		name   string
		cfg    func(*CacheAwareConfig)
		load   []int
		index  map[int][]uint64 // worker → blocks recorded for session 9
		blocks []uint64
		want   int
		branch string
	}{
		{name: "imbalanced (abs and rel) → least loaded even against a full match",
			load: []int{40, 5, 3, 3}, index: map[int][]uint64{0: B}, want: 2, branch: "balance"},
		{name: "abs difference not above the threshold → not imbalanced",
			load: []int{35, 3, 3, 3}, index: map[int][]uint64{0: B}, want: 0, branch: "hit"},
		{name: "rel ratio not above the threshold → not imbalanced",
			cfg:  func(c *CacheAwareConfig) { c.BalanceRel = 2 },
			load: []int{60, 30, 30, 30}, index: map[int][]uint64{0: B}, want: 0, branch: "hit"},
		{name: "min load 0: any max above abs is imbalanced",
			load: []int{33, 1, 0, 1}, want: 2, branch: "balance"},
		{name: "match ratio above threshold → longest match",
			load: []int{3, 0, 0, 0}, index: map[int][]uint64{0: B[:8], 1: B[:3]}, want: 0, branch: "hit"},
		{name: "the longest prefix counts, not the overlap",
			load: []int{0, 0, 0, 0}, index: map[int][]uint64{0: B[1:], 1: B[:6]}, want: 1, branch: "hit"},
		{name: "ratio equal to the threshold follows the cache (≥)",
			load: []int{0, 0, 0, 0}, index: map[int][]uint64{3: B[:5]}, want: 3, branch: "hit"},
		{name: "StrictMatch: ratio equal to the threshold is a miss (SGLang's >)",
			cfg:  func(c *CacheAwareConfig) { c.StrictMatch = true },
			load: []int{1, 0, 0, 0}, index: map[int][]uint64{3: B[:5]}, want: 1, branch: "miss"},
		{name: "tied best matches → the least loaded of them",
			load: []int{2, 1, 0, 0}, index: map[int][]uint64{0: B[:8], 1: B[:8]}, want: 1, branch: "hit"},
		{name: "low match → least loaded",
			load: []int{0, 2, 1, 0}, index: map[int][]uint64{1: B[:4]}, want: 0, branch: "miss"},
		{name: "low match, MissSmallestCache → fewest recorded blocks",
			cfg:  func(c *CacheAwareConfig) { c.Miss = MissSmallestCache },
			load: []int{0, 2, 1, 0}, index: map[int][]uint64{0: chainBlocks(5, 9), 1: B[:4], 3: chainBlocks(6, 2)}, want: 2, branch: "miss"},
		{name: "empty prompt: ratio 0",
			load: []int{1, 1, 0, 1}, index: map[int][]uint64{0: B}, blocks: []uint64{}, want: 2, branch: "miss"},
		{name: "threshold 0: always follows the (possibly empty) best match",
			cfg:  func(c *CacheAwareConfig) { c.CacheThreshold = 0 },
			load: []int{1, 1, 0, 1}, blocks: []uint64{}, want: 2, branch: "hit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := v0CacheAwareConfig(4)
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			p, err := NewCacheAwareDP(cfg)
			require.NoError(t, err)
			copy(p.load, c.load)
			for w, b := range c.index {
				p.index.Set(w, 9, b)
			}
			blocks := c.blocks
			if blocks == nil {
				blocks = B
			}
			st := p.Begin(NewDispatch(req(0, 1, blocks)))
			require.Equal(t, Step{Action: ActRun, P: -1, D: c.want, Mode: ModeFused, Unadmitted: true}, st)
			want := map[string]CacheAwareStats{"balance": {Balance: 1}, "hit": {CacheHit: 1}, "miss": {Miss: 1}}[c.branch]
			require.Equal(t, want, p.Stats())
			require.Equal(t, c.load[c.want]+1, p.Load(c.want))
			if len(blocks) > 0 {
				require.Equal(t, blocks, p.Index().Owned(c.want, 0), "the routed prompt is recorded on the chosen worker")
			}
		})
	}
}

func TestCacheAwareDPLoadAndEviction(t *testing.T) {
	p, err := NewCacheAwareDP(DefaultCacheAwareConfig(2))
	require.NoError(t, err)
	st := p.Begin(NewDispatch(req(0, 0, chainBlocks(0, 4))))
	require.Equal(t, 0, st.D)
	// Next turn matches worker 0 fully.
	require.Equal(t, 0, p.Begin(NewDispatch(req(0, 1, chainBlocks(0, 6)))).D)
	require.Equal(t, 2, p.Load(0))
	p.Finished(0)
	p.Finished(0)
	p.Finished(0)
	p.Finished(-1)
	require.Equal(t, 0, p.Load(0))
	p.Evicted(0, 0)
	require.Zero(t, p.Index().WorkerBlocks(0))
	// Ratio 0 → least loaded → worker 0 (ties: lowest index).
	require.Equal(t, 0, p.Begin(NewDispatch(req(0, 2, chainBlocks(0, 8)))).D)
}

// TestCacheAwareDPMatchesRule checks Begin against a direct transcription
// of the rule on random histories.
func TestCacheAwareDPMatchesRule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(t, "workers")
		cfg := DefaultCacheAwareConfig(n)
		cfg.CacheThreshold = rapid.SampledFrom([]float64{0, 0.3, 0.5, 1}).Draw(t, "thr")
		cfg.BalanceAbs = rapid.IntRange(0, 4).Draw(t, "abs")
		cfg.BalanceRel = rapid.SampledFrom([]float64{1, 1.0001, 1.5}).Draw(t, "rel")
		cfg.Miss = MissRule(rapid.IntRange(0, 1).Draw(t, "miss"))
		cfg.StrictMatch = rapid.Bool().Draw(t, "strict")
		p, err := NewCacheAwareDP(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// q routes the same requests through LongestPrefix + BeginMatched
		// (the bucket adapter's path).
		q, _ := NewCacheAwareDP(cfg)
		match := make([]int, n)
		ref := newRefIndex(n)
		load := make([]int, n)
		var running []int
		turn := map[int32]int{}
		for i := rapid.IntRange(1, 80).Draw(t, "steps"); i > 0; i-- {
			switch rapid.IntRange(0, 3).Draw(t, "event") {
			case 0:
				if len(running) > 0 {
					j := rapid.IntRange(0, len(running)-1).Draw(t, "done")
					p.Finished(running[j])
					q.Finished(running[j])
					load[running[j]]--
					running = append(running[:j], running[j+1:]...)
				}
			case 1:
				w, s := rapid.IntRange(0, n-1).Draw(t, "ew"), int32(rapid.IntRange(0, 3).Draw(t, "es"))
				p.Evicted(w, s)
				q.Evicted(w, s)
				ref.Remove(w, s)
			default:
				s := int32(rapid.IntRange(0, 3).Draw(t, "s"))
				blocks := chainBlocks(s, turn[s]*2)
				if rapid.Bool().Draw(t, "sharedPrefix") {
					blocks = append(chainBlocks(99, 4), blocks...)
				}
				turn[s]++
				// The rule.
				lo, hi := load[0], load[0]
				for _, l := range load {
					lo, hi = min(lo, l), max(hi, l)
				}
				least := func(ok func(int) bool) int {
					w := -1
					for i := range load {
						if ok(i) && (w < 0 || load[i] < load[w]) {
							w = i
						}
					}
					return w
				}
				all := func(int) bool { return true }
				var want int
				if hi-lo > cfg.BalanceAbs && float64(hi) > cfg.BalanceRel*float64(lo) {
					want = least(all)
				} else {
					match := ref.longestPrefix(blocks)
					best := 0
					for _, m := range match {
						best = max(best, m)
					}
					ratio := 0.0
					if len(blocks) > 0 {
						ratio = float64(best) / float64(len(blocks))
					}
					switch {
					case ratio > cfg.CacheThreshold || (!cfg.StrictMatch && ratio == cfg.CacheThreshold):
						want = least(func(i int) bool { return match[i] == best })
					case cfg.Miss == MissSmallestCache:
						res := ref.resident()
						want = 0
						for i := range res {
							if len(res[i]) < len(res[want]) {
								want = i
							}
						}
					default:
						want = least(all)
					}
				}
				r := req(s, turn[s], blocks)
				st := p.Begin(NewDispatch(r))
				if st.D != want {
					t.Fatalf("CacheAwareDP chose %d, the rule chooses %d (load %v)", st.D, want, load)
				}
				q.LongestPrefix(r, match)
				if d := q.BeginMatched(r, match); d != want || q.Stats() != p.Stats() {
					t.Fatalf("BeginMatched chose %d (stats %+v), the rule chooses %d (Begin's stats %+v)", d, q.Stats(), want, p.Stats())
				}
				load[want]++
				running = append(running, want)
				ref.Set(want, s, blocks)
			}
		}
	})
}

// v0CacheAwareConfig is pdemu's cache-aware rule before issue 10 (older
// SGLang thresholds, ≥, miss → least loaded), which the branch table uses.
func v0CacheAwareConfig(n int) CacheAwareConfig {
	return CacheAwareConfig{Workers: n, CacheThreshold: 0.5, BalanceAbs: 32, BalanceRel: 1.0001}
}

// TestCacheAwareDPSGLangDefaults: with SGLang's defaults, a miss goes to
// the smallest tree (not the least loaded worker), the ratio must be
// strictly above 0.3, and imbalance needs max−min > 64 and max > 1.5·min.
func TestCacheAwareDPSGLangDefaults(t *testing.T) {
	B := chainBlocks(0, 10)
	p, err := NewCacheAwareDP(DefaultCacheAwareConfig(3))
	require.NoError(t, err)
	// Worker 0 records 10 blocks of another session, worker 1 records 3, worker 2 records 6.
	p.index.Set(0, 1, chainBlocks(100, 10))
	p.index.Set(1, 2, chainBlocks(200, 3))
	p.index.Set(2, 3, chainBlocks(300, 6))
	copy(p.load, []int{0, 5, 0})
	// A prompt matching 3 of 10 blocks on worker 2 (ratio 0.3, not > 0.3): a
	// miss, to the smallest tree (worker 1), although worker 1 is the most loaded.
	p.index.Set(2, 4, B[:3])
	st := p.Begin(NewDispatch(req(0, 9, B)))
	require.Equal(t, 1, st.D)
	require.Equal(t, CacheAwareStats{Miss: 1}, p.Stats())
	// Load 70 vs 5: max−min 65 > 64 and 70 > 1.5·5: balance to the least loaded.
	copy(p.load, []int{70, 5, 6})
	st = p.Begin(NewDispatch(req(1, 9, B)))
	require.Equal(t, 1, st.D)
	require.Equal(t, 1, p.Stats().Balance)
	// 60 vs 0: max−min 60 ≤ 64: not imbalanced; the prompt is recorded on
	// worker 1 (full match): cache hit.
	copy(p.load, []int{60, 0, 0})
	st = p.Begin(NewDispatch(req(2, 9, B)))
	require.Equal(t, 1, st.D)
	require.Equal(t, 1, p.Stats().CacheHit)
}

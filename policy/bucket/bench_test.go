package bucket

import (
	"fmt"
	"testing"
	"time"

	"github.com/pdemu/pdemu/workload"
)

// constProber answers every probe with the same prefix (the probe's own
// cost, a walk of the instance's cache, belongs to the runtime).
type constProber int

func (p constProber) CachedPrefix(_ int, blocks []uint64) int { return min(int(p), len(blocks)) }

// benchBuckets: three buckets of four instances, sized for 16-token blocks.
var benchBuckets = []BucketConfig{
	{Name: "short", Range: Range{0, 32768}, Instances: 4},
	{Name: "medium", Range: Range{32769, 81920}, Instances: 4},
	{Name: "long", Range: Range{81921, 131072}, Instances: 4},
}

// twoLevel is a warmed-up two-level router: every bucket's meta-store
// holds 16 sessions of nb blocks over its 4 instances; the request shares
// the first half of session 3's blocks.
type twoLevel struct {
	g      Global
	locals []Local
	views  []BucketView
	inst   [][]InstanceView
	r      *workload.Request
	probe  Prober
	score  bool
}

func newTwoLevel(b *testing.B, global, local string, nb int) *twoLevel {
	g, err := NewGlobal(GlobalConfig{Policy: global, LengthPenaltyWeight: 1, LoadWeight: 1, CacheWeight: 1}, benchBuckets)
	if err != nil {
		b.Fatal(err)
	}
	tl := &twoLevel{g: g, score: global == PolicyBucketScore}
	cfg := LocalConfig{
		Policy: local, MetaStoreTTL: 1000 * time.Second, ProbeLatency: 10 * time.Microsecond, ProbeTopK: 4,
		LoadAlpha: 0.1, ScoreAlpha: 1, ScoreBeta: 0.1, PrefixK: 8, KVC: KVCConfig{Alpha: 1},
	}
	choices := make([]uint64, nb/2+1)
	choices[nb/2] = 1
	tl.r = &workload.Request{ID: 1, Session: 3, InputLen: nb * 16, OutputLen: 200, Blocks: chain(3, nb, choices...), BlockTokens: 16}
	tl.probe = constProber(nb / 2)
	for id, bc := range benchBuckets {
		l, err := NewLocal(cfg, bc.Instances)
		if err != nil {
			b.Fatal(err)
		}
		for s := range 16 {
			l.Routed(&workload.Request{Session: int32(s), Blocks: chain(uint64(s), nb)}, s%bc.Instances, time.Duration(s)*time.Second)
		}
		tl.locals = append(tl.locals, l)
		tl.views = append(tl.views, BucketView{ID: id, Name: bc.Name, Min: bc.Range.Min, Max: bc.Range.Max, Instances: bc.Instances,
			QueueSum: 2, QueueMax: 1, KVUsed: 200000, KVTotal: 400000, Active: 8})
		iv := make([]InstanceView, bc.Instances)
		for i := range iv {
			iv[i] = InstanceView{Index: i, Queue: i % 2, Running: 2, KVUsed: 50000, KVTotal: 100000,
				QueuedPrefillTokens: int64(1000 * i), PrefillRate: 20000}
		}
		tl.inst = append(tl.inst, iv)
	}
	return tl
}

func (tl *twoLevel) route(now time.Duration) (GlobalDecision, LocalDecision) {
	if tl.score {
		for b := range tl.views {
			tl.views[b].PredictedPrefix = tl.locals[b].PredictPrefix(tl.r, now)
		}
	}
	gd := tl.g.Route(tl.r, tl.views, now)
	if gd.Bucket < 0 {
		return gd, LocalDecision{Instance: -1}
	}
	return gd, tl.locals[gd.Bucket].Route(tl.r, tl.inst[gd.Bucket], tl.probe, now)
}

// BenchmarkTwoLevelRoute is one routing decision (global, then local in
// the chosen bucket; bucket_score also asks every bucket's meta-store for
// its PredictPrefix) for 3 buckets × 4 instances.
func BenchmarkTwoLevelRoute(b *testing.B) {
	for _, nb := range []int{64, 4096} {
		for _, global := range []string{PolicyStrictInputLength, PolicyBucketScore} {
			for _, local := range []string{PolicyCacheAffinity, PolicyPrecise, PolicyLeastLoaded} {
				b.Run(fmt.Sprintf("blocks=%d/%s/%s", nb, global, local), func(b *testing.B) {
					tl := newTwoLevel(b, global, local, nb)
					now := 20 * time.Second
					if gd, ld := tl.route(now); gd.Bucket < 0 || ld.Instance < 0 {
						b.Fatalf("no route: %+v %+v", gd, ld)
					}
					b.ReportAllocs()
					for b.Loop() {
						tl.route(now)
					}
				})
			}
		}
	}
}

// BenchmarkRouted is the meta-store update after a decision: the request's
// blocks recorded on the chosen instance (half of them already there).
// With a TTL every block's last-seen time is refreshed; without one only
// the blocks the instance does not hold yet are written.
func BenchmarkRouted(b *testing.B) {
	for _, nb := range []int{64, 4096} {
		for _, ttl := range []time.Duration{1000 * time.Second, 0} {
			b.Run(fmt.Sprintf("blocks=%d/ttl=%v", nb, ttl), func(b *testing.B) {
				l, err := NewLocal(LocalConfig{Policy: PolicyCacheAffinity, MetaStoreTTL: ttl}, 4)
				if err != nil {
					b.Fatal(err)
				}
				for s := range 16 {
					l.Routed(&workload.Request{Session: int32(s), Blocks: chain(uint64(s), nb)}, s%4, 0)
				}
				r := &workload.Request{Session: 3, Blocks: chain(3, nb)}
				now := 20 * time.Second
				b.ReportAllocs()
				for b.Loop() {
					l.Routed(r, 1, now)
					now += time.Millisecond
				}
			})
		}
	}
}

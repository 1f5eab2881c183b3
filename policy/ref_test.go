package policy

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/workload"
)

// This file holds the plain reference implementation of Algorithm 1 (a
// direct transcription of the spec: resident[d] as a set built from every
// owner's list, overlap by scanning every block) and the property tests
// that the fast index and Route agree with it on arbitrary inputs.

// refIndex records the same (worker, session) → blocks lists as
// ResidentIndex, with nothing clever.
type refIndex struct {
	n     int
	owned map[ownerKey][]uint64
}

func newRefIndex(n int) *refIndex { return &refIndex{n: n, owned: map[ownerKey][]uint64{}} }

func (r *refIndex) Set(d int, s int32, blocks []uint64) {
	if len(blocks) == 0 {
		delete(r.owned, ownerKey{int32(d), s})
		return
	}
	r.owned[ownerKey{int32(d), s}] = slices.Clone(blocks)
}

func (r *refIndex) Remove(d int, s int32) { delete(r.owned, ownerKey{int32(d), s}) }

// resident returns resident[d] for every d: a map[uint64]set per worker.
func (r *refIndex) resident() []map[uint64]struct{} {
	res := make([]map[uint64]struct{}, r.n)
	for d := range res {
		res[d] = map[uint64]struct{}{}
	}
	for k, list := range r.owned {
		for _, b := range list {
			res[k.d][b] = struct{}{}
		}
	}
	return res
}

// overlap is line 6 of Algorithm 1: for each worker, the number of the
// request's block positions whose hash is in resident[d].
func (r *refIndex) overlap(blocks []uint64) []int { return r.count(blocks, false) }

// longestPrefix is, per worker, the longest prefix of blocks in resident[d].
func (r *refIndex) longestPrefix(blocks []uint64) []int { return r.count(blocks, true) }

// count is, per worker, the block positions whose hash is in
// resident[d]: all of them, or up to the first that is not (prefix).
func (r *refIndex) count(blocks []uint64, prefix bool) []int {
	res := r.resident()
	out := make([]int, r.n)
	for d := range out {
		for _, b := range blocks {
			if _, ok := res[d][b]; ok {
				out[d]++
			} else if prefix {
				break
			}
		}
	}
	return out
}

// refState is the router state Σ of §2.3 as plain values.
type refState struct {
	alpha    float64
	tau      int
	pin      int
	rejects  []int
	inflight []int
	assigned []int64
	tried    []bool
}

// refRoute is Algorithm 1 line by line, over the untried workers.
func refRoute(ix *refIndex, st refState, blocks []uint64) int {
	n := ix.n
	// Lines 1–2.
	var C []int
	for d := 0; d < n; d++ {
		if !st.tried[d] && st.rejects[d] < st.tau {
			C = append(C, d)
		}
	}
	// Lines 3–4 (argmin over the untried workers, lowest index on ties).
	if len(C) == 0 {
		best := -1
		for d := 0; d < n; d++ {
			if !st.tried[d] && (best < 0 || st.rejects[d] < st.rejects[best]) {
				best = d
			}
		}
		return best
	}
	// Lines 5–11.
	ov := ix.overlap(blocks)
	type score struct {
		main   float64
		sticky int
		negInf int
		negAsn int64
	}
	greater := func(a, b score) bool {
		if a.main != b.main {
			return a.main > b.main
		}
		if a.sticky != b.sticky {
			return a.sticky > b.sticky
		}
		if a.negInf != b.negInf {
			return a.negInf > b.negInf
		}
		return a.negAsn > b.negAsn
	}
	best, bestScore := -1, score{}
	for _, d := range C {
		sticky := 0
		if st.pin == d {
			sticky = 1
		}
		sc := score{float64(ov[d]) + st.alpha*float64(sticky), sticky, -st.inflight[d], -st.assigned[d]}
		if best < 0 || greater(sc, bestScore) {
			best, bestScore = d, sc
		}
	}
	return best
}

func commonPrefixRef(a, b []uint64) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// ---------------------------------------------------------------- generators

// world draws index contents: per-session prefix chains (a shared system
// prompt, then session blocks), recorded on random workers with random
// lengths, plus — when adversarial — lists that break the chain structure
// (a small alphabet with duplicates, reused hashes at other positions,
// spliced chains).
type world struct {
	n           int
	sessions    int
	chains      [][]uint64
	adversarial bool
}

func drawWorld(t *rapid.T) *world {
	n := rapid.SampledFrom([]int{1, 2, 3, 4, 8, 63, 64, 65, 130}).Draw(t, "workers")
	w := &world{n: n, sessions: rapid.IntRange(1, 6).Draw(t, "sessions"), adversarial: rapid.Bool().Draw(t, "adversarial")}
	sys := rapid.IntRange(0, 12).Draw(t, "sys")
	for s := 0; s < w.sessions; s++ {
		w.chains = append(w.chains, sharedChain(s, sys, 60))
	}
	return w
}

func (w *world) list(t *rapid.T, s int, label string) []uint64 {
	kind := 0
	if w.adversarial {
		kind = rapid.IntRange(0, 3).Draw(t, label+"-kind")
	}
	switch kind {
	case 1: // small alphabet: duplicates, hashes at many positions
		return rapid.SliceOfN(rapid.Uint64Range(0, 12), 0, 20).Draw(t, label+"-alpha")
	case 2: // another session's chain spliced onto ours
		o := rapid.IntRange(0, w.sessions-1).Draw(t, label+"-other")
		i := rapid.IntRange(0, 30).Draw(t, label+"-cut")
		j := rapid.IntRange(0, 30).Draw(t, label+"-len")
		return append(slices.Clone(w.chains[s][:i]), w.chains[o][30:30+j]...)
	case 3: // our chain with one block replaced
		c := slices.Clone(w.chains[s][:rapid.IntRange(1, 60).Draw(t, label+"-n")])
		c[rapid.IntRange(0, len(c)-1).Draw(t, label+"-at")] = rapid.Uint64Range(0, 12).Draw(t, label+"-v")
		return c
	}
	return w.chains[s][:rapid.IntRange(0, 60).Draw(t, label+"-n")]
}

// request draws request blocks: mostly a session's chain (shorter or
// longer than what is recorded), possibly with a foreign tail. Without a
// tail, it is either a fresh copy or the list itself, which may share its
// backing array (w.chains, never modified) with records set by
// SetImmutable: both readings of the common prefix get exercised.
func (w *world) request(t *rapid.T, s int) []uint64 {
	l := w.list(t, s, "req")
	if rapid.Bool().Draw(t, "tail") {
		return append(slices.Clone(l), rapid.SliceOfN(rapid.Uint64Range(0, 12), 0, 6).Draw(t, "tail-blocks")...)
	}
	if rapid.Bool().Draw(t, "shared") {
		return l
	}
	return slices.Clone(l)
}

// mutate applies a random sequence of Set/SetImmutable/Remove to both
// indexes (every list w draws is never modified afterwards, so
// SetImmutable's promise holds).
func (w *world) mutate(t *rapid.T, ix *ResidentIndex, ref *refIndex) {
	ops := rapid.IntRange(0, 40).Draw(t, "ops")
	for op := 0; op < ops; op++ {
		d := rapid.IntRange(0, w.n-1).Draw(t, "d")
		s := rapid.IntRange(0, w.sessions-1).Draw(t, "s")
		if rapid.IntRange(0, 4).Draw(t, "remove") == 0 {
			ix.Remove(d, int32(s))
			ref.Remove(d, int32(s))
			continue
		}
		l := w.list(t, s, "set")
		if rapid.Bool().Draw(t, "immutable") {
			ix.SetImmutable(d, int32(s), l)
		} else {
			ix.Set(d, int32(s), l)
		}
		ref.Set(d, int32(s), l)
	}
}

// ---------------------------------------------------------------- properties

func withChainMin(t *rapid.T, v int) {
	old := chainMin
	chainMin = v
	t.Cleanup(func() { chainMin = old })
}

func TestIndexMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		withChainMin(t, rapid.SampledFrom([]int{1, 2, 8}).Draw(t, "chainMin"))
		w := drawWorld(t)
		ix, ref := NewResidentIndex(w.n), newRefIndex(w.n)
		w.mutate(t, ix, ref)

		res := ref.resident()
		total := map[uint64]bool{}
		for d := 0; d < w.n; d++ {
			if got, want := ix.WorkerBlocks(d), len(res[d]); got != want {
				t.Fatalf("WorkerBlocks(%d) = %d, want %d", d, got, want)
			}
			for b := range res[d] {
				total[b] = true
				if !ix.Has(d, b) {
					t.Fatalf("Has(%d, %d) = false", d, b)
				}
			}
		}
		if ix.Blocks() != len(total) {
			t.Fatalf("Blocks() = %d, want %d", ix.Blocks(), len(total))
		}
		for q := 0; q < 5; q++ {
			s := rapid.IntRange(0, w.sessions-1).Draw(t, "qs")
			blocks := w.request(t, s)
			want := ref.overlap(blocks)
			got := make([]int, w.n)
			ix.Overlap(blocks, got)
			if !slices.Equal(got, want) {
				t.Fatalf("Overlap(%v) = %v, want %v", blocks, got, want)
			}
			// With every worker's record of s as the hint (recorded or not).
			for d := -1; d < w.n; d++ {
				clear(got)
				ix.OverlapOwned(blocks, d, int32(s), got)
				if !slices.Equal(got, want) {
					t.Fatalf("OverlapOwned(%v, %d) = %v, want %v (hint %v, chained=%v)", blocks, d, got, want, ix.Owned(max(d, 0), int32(s)), ix.Chained())
				}
			}
			for d := 0; d < w.n; d++ {
				if got, want := ix.OwnedPrefix(d, int32(s), blocks), commonPrefixRef(blocks, ref.owned[ownerKey{int32(d), int32(s)}]); got != want {
					t.Fatalf("OwnedPrefix(%d, %v) = %d, want %d", d, blocks, got, want)
				}
			}
			ix.LongestPrefix(blocks, got)
			want = ref.longestPrefix(blocks)
			if !slices.Equal(got, want) {
				t.Fatalf("LongestPrefix(%v) = %v, want %v", blocks, got, want)
			}
			for d := -1; d < w.n; d++ {
				for i := range got {
					got[i] = -7 // LongestPrefixOwned sets every worker's value
				}
				ix.LongestPrefixOwned(blocks, d, int32(s), got)
				if !slices.Equal(got, want) {
					t.Fatalf("LongestPrefixOwned(%v, %d) = %v, want %v (hint %v, chained=%v)", blocks, d, got, want, ix.Owned(max(d, 0), int32(s)), ix.Chained())
				}
			}
		}
	})
}

func TestRouteMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		withChainMin(t, rapid.SampledFrom([]int{1, 8}).Draw(t, "chainMin"))
		w := drawWorld(t)
		cfg := KVCConfig{
			Alpha:     rapid.SampledFrom([]float64{0, 0.5, 1, 2, 100}).Draw(t, "alpha"),
			TauReject: rapid.IntRange(1, 3).Draw(t, "tau"),
			Epsilon:   2, Prefill: 1, Decode: w.n,
		}
		k, err := NewKVC(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ref := newRefIndex(w.n)
		w.mutate(t, k.index, ref)
		for q := 0; q < 4; q++ {
			s := int32(rapid.IntRange(0, w.sessions-1).Draw(t, "s"))
			st := refState{
				alpha: cfg.Alpha, tau: cfg.TauReject, pin: -1,
				rejects: make([]int, w.n), inflight: make([]int, w.n), assigned: make([]int64, w.n), tried: make([]bool, w.n),
			}
			// Pin: usually a worker holding the session (the chain hint).
			var holders []int
			for d := 0; d < w.n; d++ {
				if k.index.Owned(d, s) != nil {
					holders = append(holders, d)
				}
			}
			switch rapid.IntRange(0, 3).Draw(t, "pinKind") {
			case 0, 1:
				if len(holders) > 0 {
					st.pin = rapid.SampledFrom(holders).Draw(t, "pinHolder")
				}
			case 2:
				st.pin = rapid.IntRange(0, w.n-1).Draw(t, "pinAny")
			}
			ds := NewDispatch(&workload.Request{Session: s, Blocks: w.request(t, int(s))})
			for d := 0; d < w.n; d++ {
				st.rejects[d] = rapid.IntRange(0, cfg.TauReject+1).Draw(t, "rej")
				st.inflight[d] = rapid.IntRange(0, 2).Draw(t, "infl")
				st.assigned[d] = int64(rapid.IntRange(0, 2).Draw(t, "asn"))
				if rapid.IntRange(0, 3).Draw(t, "tried") == 0 {
					st.tried[d] = true
					ds.markTried(d)
				}
			}
			ss := k.state(s)
			ss.pin = int32(st.pin)
			for d := range ss.rejects {
				k.setRejects(ss, d, int32(st.rejects[d]))
			}
			copy(k.inflight, st.inflight)
			copy(k.assigned, st.assigned)
			if got, want := k.Route(ds), refRoute(ref, st, ds.Req.Blocks); got != want {
				t.Fatalf("Route = %d, reference = %d (blocks %v, state %+v, chained %v)", got, want, ds.Req.Blocks, st, k.index.Chained())
			}
		}
	})
}

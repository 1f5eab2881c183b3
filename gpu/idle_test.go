package gpu

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestIdleListIsLRU: whatever sequence of sessions becoming busy, idle and
// dropped, evictFor evicts exactly what a scan of every session would
// (idle for at least minIdle, not keep, least recently used first, ties by
// session index), one O(1) step per victim.
func TestIdleListIsLRU(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w, err := NewDecodeWorker(DecodeConfig{Name: "d", Budget: 1 << 20, Rho: 1}, linearCost{})
		require.NoError(t, err)
		now := time.Duration(0)
		for range rapid.IntRange(0, 60).Draw(t, "ops") {
			id := rapid.Int32Range(0, 12).Draw(t, "session")
			now += time.Duration(rapid.IntRange(0, 2).Draw(t, "dt"))
			s := w.sess[id]
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); {
			case s == nil:
				s = w.newResidency(id)
				s.tokens = 10
				w.setUsed(w.used + 10)
				activate(s)
				s.lastUse = now
			case op == 0:
				activate(s)
				s.lastUse = now
			case op == 1 && s.active > 0:
				s.active--
				s.lastUse = now
				if s.active == 0 {
					w.linkIdle(s)
				}
			case op == 2:
				w.dropResidency(id, s)
			case op == 3:
				keep := rapid.Int32Range(-1, 12).Draw(t, "keep")
				minIdle := time.Duration(rapid.IntRange(0, 4).Draw(t, "minIdle"))
				need := rapid.IntRange(0, 40).Draw(t, "need")
				w.cap = w.used + need - 10*rapid.IntRange(0, 4).Draw(t, "evictions")
				want := bruteVictims(w, now, keep, need, minIdle)
				w.out = w.out[:0]
				w.evictFor(now, keep, need, minIdle, 77)
				var got []int32
				for _, e := range w.out {
					got = append(got, e.Session)
					require.Equal(t, EvictCapacity, e.Cause)
					require.Equal(t, int64(77), e.For, "names the request it made room for")
				}
				require.Equal(t, want, got)
				w.cap = 1 << 20
			}
		}
	})
}

// bruteVictims is evictFor's specification by scanning every session.
func bruteVictims(w *DecodeWorker, now time.Duration, keep int32, need int, minIdle time.Duration) []int32 {
	var idle []*residency
	for id, s := range w.sess {
		if id != keep && s.active == 0 && now-s.lastUse >= minIdle {
			idle = append(idle, s)
		}
	}
	sort.Slice(idle, func(i, j int) bool {
		a, b := idle[i], idle[j]
		return a.lastUse < b.lastUse || a.lastUse == b.lastUse && a.id < b.id
	})
	var out []int32
	used := w.used
	for _, s := range idle {
		if used+need <= w.cap {
			break
		}
		used -= s.tokens
		out = append(out, s.id)
	}
	return out
}

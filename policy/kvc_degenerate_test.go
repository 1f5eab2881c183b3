package policy

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// blacklistAll drives session 0 until every decode worker of k rejected it
// τ_reject times, through capacity rejections.
func blacklistAll(t *testing.T, k *KVC) {
	t.Helper()
	for turn := 0; ; turn++ {
		all := true
		for d := 0; d < k.cfg.Decode; d++ {
			all = all && k.Rejects(0, d) >= k.cfg.TauReject
		}
		if all {
			return
		}
		require.Less(t, turn, 100, "never fully blacklisted")
		ds := NewDispatch(req(0, turn, chainBlocks(0, 4)))
		st := k.Begin(ds)
		for st.Action == ActAdmit {
			st = k.Rejected(ds, st.D, ReasonNoCapacity)
		}
	}
}

// TestAllBlacklistedBranches checks both readings of the fully-blacklisted
// case: least-rejected (Algorithm 1 lines 3–4) still asks a decode worker
// for admission and a success resets its counter (v2); the degenerate
// fallback (§3.4) never asks again.
func TestAllBlacklistedBranches(t *testing.T) {
	for _, tc := range []struct {
		name       string
		v1, degen  bool
		wantAction Action
	}{
		{"v2 least-rejected", false, false, ActAdmit},
		{"v1 least-rejected", true, false, ActAdmit},
		{"v1 degenerate", true, true, ActPrefill},
		{"v2 degenerate", false, true, ActPrefill},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKVC(t, KVCConfig{Alpha: 1, Decode: 3, V1: tc.v1, DegenerateFallback: tc.degen})
			blacklistAll(t, k)
			ds := NewDispatch(req(0, 50, chainBlocks(0, 4)))
			st := k.Begin(ds)
			require.Equal(t, tc.wantAction, st.Action)
			if tc.wantAction == ActAdmit {
				k.Admitted(ds, st.D, ModeReseed)
				if tc.v1 {
					require.GreaterOrEqual(t, k.Rejects(0, st.D), k.cfg.TauReject, "v1 keeps the blacklist")
				} else {
					require.Zero(t, k.Rejects(0, st.D), "v2 resets on success")
				}
				return
			}
			require.Equal(t, ModeFallback, st.Mode)
			require.True(t, st.Unadmitted)
		})
	}
}

// TestDegenerateThrashProperty: in degenerate mode, once a session is
// blacklisted on every decode worker, every later request is a Fallback
// (with or without reset-on-success: a Fallback is no success), every one
// bumps rejects[s, d] of the round-robin worker it went to by exactly one,
// and the session's pin follows the round robin (it thrashes: a migration
// each time it lands on another worker). Random interleavings of other
// sessions' traffic move the round robin and must not change any of it.
func TestDegenerateThrashProperty(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		nd := 2 + rng.IntN(4)
		k := newKVC(t, KVCConfig{Alpha: 1, Decode: nd, TauReject: 1 + rng.IntN(3), Epsilon: 1 + rng.IntN(nd),
			V1: rng.IntN(2) == 0, DegenerateFallback: true})
		blacklistAll(t, k)
		for i := 0; i < 60; i++ {
			if rng.IntN(3) == 0 { // another session, admitted where it is sent
				ds := NewDispatch(req(int32(1+rng.IntN(5)), i, chainBlocks(9, 3)))
				if st := k.Begin(ds); st.Action == ActAdmit {
					k.Admitted(ds, st.D, ModeSeed)
				}
				continue
			}
			before := make([]int, nd)
			for d := range before {
				before[d] = k.Rejects(0, d)
			}
			pin, mig := k.Pin(0), k.Stats(0).Migrations
			fb := k.Stats(0).Fallbacks
			st := k.Begin(NewDispatch(req(0, 100+i, chainBlocks(0, 4))))
			require.Equal(t, ActPrefill, st.Action, "seed %d: a blacklisted session never gets admission again", seed)
			require.Equal(t, ModeFallback, st.Mode)
			require.Equal(t, fb+1, k.Stats(0).Fallbacks)
			for d := range before {
				want := before[d]
				if d == st.D {
					want++
				}
				require.Equal(t, want, k.Rejects(0, d), "seed %d: only the retried worker's counter moves, by one", seed)
			}
			require.Equal(t, st.D, k.Pin(0), "the pin follows the fallback")
			wantMig := mig
			if pin >= 0 && pin != st.D {
				wantMig++
			}
			require.Equal(t, wantMig, k.Stats(0).Migrations)
		}
	}
}

// TestLeastRejectedNoBump: in the pseudocode's reading a Fallback leaves
// every counter alone (the behaviour issue 19 found masking v1's thrash).
func TestLeastRejectedNoBump(t *testing.T) {
	k := newKVC(t, KVCConfig{Alpha: 1, Decode: 2, Epsilon: 1, V1: true})
	blacklistAll(t, k)
	r0, r1 := k.Rejects(0, 0), k.Rejects(0, 1)
	ds := NewDispatch(req(0, 60, chainBlocks(0, 4)))
	st := k.Begin(ds)
	require.Equal(t, ActAdmit, st.Action)
	st = k.Rejected(ds, st.D, ReasonNoCapacity)
	require.Equal(t, ModeFallback, st.Mode)
	require.Equal(t, r0+r1+1, k.Rejects(0, 0)+k.Rejects(0, 1), "only the rejection counted")
}

package policy

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/workload"
)

// TestBlacklistBitsFollowRejects: whatever sequence of admissions,
// rejections, degenerate Fallbacks and forgotten sessions a router goes
// through (with 1 to 130 decode workers: one word, a full word and
// several), every session's blacklist bit for d is rejects[s,d] ≥
// τ_reject, the set Route reads its candidates from.
func TestBlacklistBitsFollowRejects(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nd := rapid.SampledFrom([]int{1, 2, 63, 64, 65, 130}).Draw(t, "decode")
		cfg := KVCConfig{Alpha: 1, TauReject: rapid.IntRange(1, 3).Draw(t, "tau"),
			Epsilon: rapid.IntRange(1, nd+2).Draw(t, "epsilon"), Prefill: 1, Decode: nd,
			DegenerateFallback: rapid.Bool().Draw(t, "degenerateFallback"), V1: rapid.Bool().Draw(t, "v1")}
		k, err := NewKVC(cfg)
		if err != nil {
			t.Fatal(err)
		}
		id := int64(0)
		for range rapid.IntRange(1, 40).Draw(t, "requests") {
			s := int32(rapid.IntRange(0, 3).Draw(t, "session"))
			if rapid.IntRange(0, 9).Draw(t, "forget") == 0 {
				k.Forget(s)
			}
			id++
			ds := NewDispatch(&workload.Request{ID: id, Session: s, Blocks: []uint64{uint64(s), uint64(id)}})
			st := k.Begin(ds)
			for st.Action == ActAdmit {
				if rapid.IntRange(0, 2).Draw(t, "admit") == 0 {
					st = k.Admitted(ds, st.D, ModeSeed)
					break
				}
				st = k.Rejected(ds, st.D, "full")
			}
			for s, ss := range k.sess {
				for d := range nd {
					bit := ss.black[d>>6]&(1<<(uint(d)&63)) != 0
					if want := int(ss.rejects[d]) >= cfg.TauReject; bit != want {
						t.Fatalf("session %d worker %d: blacklist bit %v, rejects %d (τ %d)", s, d, bit, ss.rejects[d], cfg.TauReject)
					}
				}
				for w := len(ss.black) - 1; w >= 0; w-- {
					if hi := ss.black[w] &^ k.untried(nil, w); hi != 0 {
						t.Fatalf("session %d: blacklist bits beyond the %d workers: %x", s, nd, hi)
					}
				}
			}
		}
	})
}

// TestForgottenStateIsReusedClean: a forgotten session's state is reused
// for the next new session (so a server's memory follows its live
// sessions), and the reused state starts as a new one: no pin, no
// rejects, no blacklist bit, no counters, no resident workers.
func TestForgottenStateIsReusedClean(t *testing.T) {
	const nd = 65
	k, err := NewKVC(KVCConfig{Alpha: 1, TauReject: 1, Epsilon: 2, Prefill: 1, Decode: nd, OwnOverlap: true})
	if err != nil {
		t.Fatal(err)
	}
	ds := NewDispatch(&workload.Request{ID: 1, Session: 7, Blocks: []uint64{1, 2}})
	st := k.Begin(ds)
	for st.Action == ActAdmit && st.D != nd-1 {
		st = k.Rejected(ds, st.D, "full")
	}
	if st.Action == ActAdmit {
		k.Admitted(ds, st.D, ModeSeed)
	}
	old := k.sess[7]
	if old.pin < 0 && old.rejects[0] == 0 {
		t.Fatal("the test did not give session 7 a pin or a reject")
	}
	k.Forget(7)
	fresh := k.state(8)
	if fresh != old {
		t.Fatal("a new session did not reuse the forgotten session's state")
	}
	if fresh.pin != -1 || fresh.stats != (SessionStats{}) || len(fresh.resident) != 0 {
		t.Fatalf("reused state not reset: pin %d, stats %+v, resident %v", fresh.pin, fresh.stats, fresh.resident)
	}
	for d := range nd {
		if fresh.rejects[d] != 0 || fresh.black[d>>6]&(1<<(uint(d)&63)) != 0 {
			t.Fatalf("reused state keeps worker %d's rejects (%d) or blacklist bit", d, fresh.rejects[d])
		}
	}
	if len(fresh.rejects) != nd || len(fresh.black) != (nd+63)/64 {
		t.Fatalf("rows of %d rejects and %d blacklist words, want %d and %d", len(fresh.rejects), len(fresh.black), nd, (nd+63)/64)
	}
}

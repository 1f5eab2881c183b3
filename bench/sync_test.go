package bench_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/bench"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/workload"
)

// TestSyncKVCMatchesKVC: driven from one goroutine, the front returns the
// same Steps as KVC for the same calls.
func TestSyncKVCMatchesKVC(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := policy.KVCConfig{Alpha: 1, TauReject: rapid.IntRange(1, 3).Draw(t, "tau"),
			Epsilon: rapid.IntRange(1, 3).Draw(t, "eps"), Prefill: 2, Decode: rapid.IntRange(1, 5).Draw(t, "decode")}
		k, _ := policy.NewKVC(cfg)
		f, err := bench.NewSyncKVC(cfg)
		if err != nil {
			t.Fatal(err)
		}
		turn := map[int32]int{}
		for i := rapid.IntRange(1, 60).Draw(t, "steps"); i > 0; i-- {
			s := int32(rapid.IntRange(0, 3).Draw(t, "s"))
			switch rapid.IntRange(0, 4).Draw(t, "event") {
			case 0:
				d := rapid.IntRange(0, cfg.Decode-1).Draw(t, "d")
				k.Finished(d)
				f.Finished(d)
			case 1:
				d := rapid.IntRange(0, cfg.Decode-1).Draw(t, "d")
				k.Evicted(d, s)
				f.Evicted(d, s)
			default:
				r := &workload.Request{Session: s, Turn: turn[s], Blocks: prompt(int(s), 3*turn[s]+1)}
				turn[s]++
				a, b := policy.NewDispatch(r), policy.NewDispatch(r)
				if k.Route(a) != f.Route(b) {
					t.Fatal("Route differs")
				}
				sa, sb := k.Begin(a), f.Begin(b)
				for {
					if sa != sb {
						t.Fatalf("KVC %+v, SyncKVC %+v", sa, sb)
					}
					if sa.Action != policy.ActAdmit {
						break
					}
					if rapid.Bool().Draw(t, "accept") {
						sa, sb = k.Admitted(a, sa.D, policy.ModeReseed), f.Admitted(b, sb.D, policy.ModeReseed)
					} else {
						sa, sb = k.Rejected(a, sa.D, policy.ReasonNoCapacity), f.Rejected(b, sb.D, policy.ReasonNoCapacity)
					}
				}
			}
			if k.Stats(s) != f.Stats(s) || k.Pin(s) != f.Pin(s) || k.Rejects(s, 0) != f.Rejects(s, 0) {
				t.Fatal("state differs")
			}
		}
	})
}

// TestSyncKVCConcurrent drives the front from several goroutines (run it
// with -race) and checks the bookkeeping adds up.
func TestSyncKVCConcurrent(t *testing.T) {
	const goroutines, perG, decode = 4, 300, 4
	f, err := bench.NewSyncKVC(policy.KVCConfig{Alpha: 1, TauReject: 2, Epsilon: 2, Prefill: 2, Decode: decode})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				s := int32(g*10 + i%3)
				r := &workload.Request{Session: s, Turn: i / 3, Blocks: prompt(int(s), 1+i/3)}
				ds := policy.NewDispatch(r)
				f.Route(ds)
				st := f.Begin(ds)
				for st.Action == policy.ActAdmit {
					if (i+g)%4 == 0 {
						st = f.Rejected(ds, st.D, policy.ReasonNoCapacity)
						continue
					}
					d := st.D
					st = f.Admitted(ds, d, policy.ModeDirect)
					st.D = d
				}
				f.Finished(st.D)
				if i%50 == 49 {
					f.Evicted(st.D, s)
				}
			}
		}(g)
	}
	wg.Wait()
	total := 0
	f.Sessions(func(s int32, st policy.SessionStats) { total += st.Fallbacks })
	require.Positive(t, total)
	for d := 0; d < decode; d++ {
		require.Zero(t, f.Inflight(d), "every dispatch was finished")
	}
	_ = f.Pin(0) + f.Rejects(0, 0)
	_ = f.Stats(0)
}

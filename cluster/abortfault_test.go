package cluster_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/cluster/clustertest"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// TestAbortsUnderFaults: client aborts mixed with crashes, slowdowns, cuts
// and flaps (P/D under every policy, and fused deployments), open-ended as
// a server runs, with random detection delays, retry budgets and memory
// pressure, over multi-turn sessions. Every released request ends exactly once (the collector fails
// the run on a second end; the run fails without Done when one never
// ends), completed + failed + aborted = released, nothing is left in
// flight, and only aborted requests end aborted.
func TestAbortsUnderFaults(t *testing.T) {
	states := map[string]int{}
	faults := 0
	rapid.Check(t, func(rt *rapid.T) {
		name := rapid.SampledFrom([]string{"1p3d-mlx5.hcl", "1p3d-mlx5.hcl", "buckets-3.hcl", "dp4.hcl"}).Draw(rt, "scenario")
		src, err := scenarios.Read(name)
		require.NoError(rt, err)
		opts := topology.Options{}
		pd := name == "1p3d-mlx5.hcl"
		if pd {
			opts.Router = rapid.SampledFrom([]string{"kvc", "vanilla", "sticky_only", "kv_score"}).Draw(rt, "policy")
			opts.Vars = map[string]string{"prefills": rapid.SampledFrom([]string{"1", "2"}).Draw(rt, "prefills")}
		}
		spec, err := topology.Parse("<embedded>/"+name, src, opts)
		require.NoError(rt, err)
		spec.Recovery.RetryBudget = rapid.IntRange(0, 3).Draw(rt, "budget")
		spec.Recovery.DetectionDelay = time.Duration(rapid.IntRange(1, 3000).Draw(rt, "detect_ms")) * time.Millisecond
		horizon := 20 * time.Second
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "faults"), 5))
		if pd {
			if rapid.Bool().Draw(rt, "tight") {
				for i := range spec.Decode {
					spec.Decode[i].KVBudgetTokens = 24000
				}
			}
			randomFaults(rng, spec, horizon)
		} else {
			randomPoolFaults(rng, spec, horizon)
		}

		net, err := clustertest.New(spec, &source{})
		require.NoError(rt, err)
		net.Cluster.OpenEnded()
		n := rapid.IntRange(1, 40).Draw(rt, "requests")
		sessions := rapid.IntRange(1, 8).Draw(rt, "sessions")
		at := time.Duration(0)
		aborted := map[int64]bool{}
		// Multi-turn sessions: each turn's prompt extends the previous
		// turn's prompt and output (Direct and Append dispatches, reseeds
		// after a crash); a session whose context passes 30k tokens ends
		// and a new one takes its slot.
		type sess struct {
			id        int32
			turn, ctx int
		}
		slots := make([]sess, sessions)
		for k := range slots {
			slots[k].id = int32(k)
		}
		next := int32(sessions)
		for i := range n {
			at += time.Duration(rapid.IntRange(1, 1500).Draw(rt, "gap_ms")) * time.Millisecond
			sl := &slots[i%sessions]
			add := rapid.IntRange(100, 8000).Draw(rt, "append")
			r := req(int64(i), sl.id, sl.ctx+add)
			r.Turn, r.AppendLen, r.Last = sl.turn, add, false
			r.OutputLen = rapid.IntRange(1, 800).Draw(rt, "output")
			if sl.ctx = r.InputLen + r.OutputLen; sl.ctx > 30000 {
				r.Last = true
				*sl = sess{id: next}
				next++
			} else {
				sl.turn++
			}
			net.Inject(net.Cluster.Driver, at, cluster.Release{Req: r})
			if rapid.IntRange(0, 2).Draw(rt, "abort") == 0 {
				// The client goes away up to 20 s after sending (possibly
				// before the request reaches a worker); the feeder's
				// AbortDone follows the request's end, long after.
				aborted[int64(i)] = true
				abortAll(net, int64(i), at+time.Duration(rapid.IntRange(0, 20000).Draw(rt, "abort_ms"))*time.Millisecond+1, time.Hour)
			}
		}
		net.Inject(net.Cluster.Driver, at+time.Millisecond, cluster.EndOfInput{})
		require.NoError(rt, runBounded(rt, net, 2*time.Hour), "every request ends exactly once")
		c := net.Cluster
		require.Equal(rt, n, c.Released())
		require.Equal(rt, n, c.Collector().Ended())
		require.Empty(rt, c.InFlight())
		recs := c.Collector().Records()
		require.Len(rt, recs, n)
		faults += len(c.Faults())
		for _, r := range recs {
			states[r.State]++
			if r.State == metrics.StateAborted {
				require.True(rt, aborted[r.ID], "request %d ended aborted, its client stayed", r.ID)
			}
		}
	})
	t.Logf("%d faults; request ends by state: %v", faults, states)
}

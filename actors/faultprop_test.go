package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/internal/testlog"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// faultCaused reports whether a failed record's failure came from a fault:
// its final reason (after "last: " when it was retried) names one.
func faultCaused(reason string) bool {
	if i := strings.LastIndex(reason, "last: "); i >= 0 {
		reason = reason[i+len("last: "):]
	}
	return strings.HasPrefix(reason, "fault:") || strings.HasPrefix(reason, "link:")
}

// TestFaultAttributionAddsUp: over random chaos schedules (P/D, buckets and DP,
// every node kind, random detection delays and retry budgets) every
// request ends exactly once, and faults.csv's failed column sums to the
// requests that failed because of a fault: each is attributed to one
// fault. (In P/D runs 469 of 5,386 were attributed: a request that found
// no reachable decode worker failed unattributed.)
func TestFaultAttributionAddsUp(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		fused := rapid.Bool().Draw(rt, "fused")
		name := "1p3d-mlx5.hcl"
		chaos := fmt.Sprintf("\nrecovery {\n  retry_budget = %d\n  detection_delay = \"%dms\"\n}\n",
			rapid.IntRange(0, 3).Draw(rt, "budget"), rapid.IntRange(1, 5000).Draw(rt, "detect"))
		if fused {
			name = rapid.SampledFrom([]string{"buckets-3.hcl", "dp4.hcl"}).Draw(rt, "pool")
			chaos += fmt.Sprintf("\nchaos {\n  seed = %d\n  horizon = \"60s\"\n  restart_after = \"%ds\"\n  mtbf_fused = \"%ds\"\n}\n",
				rapid.IntRange(1, 1000).Draw(rt, "seed"), rapid.IntRange(1, 30).Draw(rt, "ra"), rapid.IntRange(5, 120).Draw(rt, "mtbf"))
		} else {
			chaos += fmt.Sprintf("\nchaos {\n  seed = %d\n  horizon = \"60s\"\n  restart_after = \"%ds\"\n  mtbf_decode = \"%ds\"\n  mtbf_link = \"%ds\"\n  mtbf_prefill = \"%ds\"\n}\n",
				rapid.IntRange(1, 1000).Draw(rt, "seed"), rapid.IntRange(1, 30).Draw(rt, "ra"),
				rapid.IntRange(5, 120).Draw(rt, "mtbf_d"), rapid.IntRange(5, 240).Draw(rt, "mtbf_l"), rapid.IntRange(5, 240).Draw(rt, "mtbf_p"))
		}
		src, err := scenarios.Read(name)
		require.NoError(rt, err)
		spec, err := topology.Parse("<embedded>/"+name, append(src, chaos...), topology.Options{})
		require.NoError(rt, err)
		if spec.Workload.Trace != "" {
			rt.Skip("needs a shared trace")
		}
		spec.Workload.MaxRequests = 150
		res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
		require.NoError(rt, err, "every request ends exactly once")
		caused := 0
		for _, r := range res.Records {
			if r.State == metrics.StateFailed && faultCaused(r.Reason) {
				caused++
			}
		}
		attributed := 0
		for _, f := range res.Faults {
			attributed += f.Failed
		}
		require.Equal(rt, caused, attributed, "failures with fault reasons vs faults.csv's failed (%d faults)", len(res.Faults))
		require.Equal(rt, res.Summary.Requests.Total, res.Summary.Requests.Completed+res.Summary.Requests.Failed)
	})
}

// TestRoutingLogEndsAtTheServer: in chaos runs the routing log of a
// completed request ends at the decode worker per_request.csv names (it
// named a dead worker for 6 % of them: retries were not logged), and a
// lost attempt appears as a try with reply "lost".
func TestRoutingLogEndsAtTheServer(t *testing.T) {
	lost := 0
	for _, seed := range []string{"3", "7", "11"} {
		src, err := scenarios.Read("chaos.hcl")
		require.NoError(t, err)
		spec, err := topology.Parse("<embedded>/chaos.hcl", src, topology.Options{Vars: map[string]string{"chaos_seed": seed}})
		require.NoError(t, err)
		res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
		require.NoError(t, err)
		for _, r := range res.Records {
			if r.State != metrics.StateCompleted || len(r.RouteLog) == 0 {
				continue
			}
			var l struct {
				DWorker string `json:"d_worker"`
				Tries   []struct {
					Reply string `json:"reply"`
				} `json:"tries"`
			}
			require.NoError(t, json.Unmarshal(r.RouteLog, &l))
			require.Equal(t, r.D, l.DWorker, "request %d (seed %s)", r.ID, seed)
			for _, tr := range l.Tries {
				if tr.Reply == "lost" {
					lost++
				}
			}
		}
	}
	require.Positive(t, lost, "the chaos runs lose attempts")
}

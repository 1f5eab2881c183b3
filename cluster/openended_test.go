package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/cluster/clustertest"
)

// openEnded builds spec's cluster with no workload of its own, open-ended,
// and injects one request every gap from gap on (ids 0..n-1, each its own
// session) and EndOfInput at end, as a server's feeder would.
func openEnded(t *testing.T, name string, n int, gap, end time.Duration) *clustertest.Net {
	t.Helper()
	net, err := clustertest.New(embedded(t, name), &source{}) // no requests of its own: io.EOF
	require.NoError(t, err)
	net.Cluster.OpenEnded()
	for i := range n {
		r := req(int64(i), int32(i), 2000)
		r.SessionName = fmt.Sprint("s", i)
		net.Inject(net.Cluster.Driver, time.Duration(i+1)*gap, cluster.Release{Req: r})
	}
	net.Inject(net.Cluster.Driver, end, cluster.EndOfInput{})
	return net
}

// An open-ended run ends once its input ended and every request it
// released ended; Read counts them.
func TestOpenEndedRunEndsAfterEndOfInput(t *testing.T) {
	net := openEnded(t, "1p3d-mlx5.hcl", 5, 100*time.Millisecond, 2*time.Second)
	require.NoError(t, net.Run())
	assert.Equal(t, 5, net.Cluster.Read())
	assert.Equal(t, 5, net.Cluster.Released())
	assert.Equal(t, 5, net.Cluster.Collector().Ended())
	assert.Empty(t, net.Cluster.InFlight())
}

// Issue 21 row 1: a server's cluster has no workload of its own, so its
// driver was "done" from the start and the fault schedule stopped at its
// first tick: no crash ever fired. Open-ended, the schedule runs until
// the input ends: every fault (chaos.hcl's d1 crash at 30 s among them) is
// detected by the router, idle or not.
func TestOpenEndedRunFiresFaults(t *testing.T) {
	net := openEnded(t, "chaos.hcl", 40, 2*time.Second, 95*time.Second)
	require.NoError(t, net.Run())
	var before int
	for _, f := range net.Cluster.Faults() {
		if f.At < 80*time.Second {
			before++
			assert.GreaterOrEqual(t, f.Detected, f.At, "fault %d (%s %s at %v) never detected", f.ID, f.Kind, f.Node, f.At)
		}
	}
	assert.GreaterOrEqual(t, before, 2, "chaos.hcl's schedule before 80 s")
	assert.Equal(t, 40, net.Cluster.Collector().Ended())
}

// abortAll injects Abort{id} into every decode node at at, and AbortDone
// at done, as a server's feeder does when request id's client goes away.
func abortAll(net *clustertest.Net, id int64, at, done time.Duration) {
	for a, k := range net.Cluster.Kinds {
		if k == cluster.KindDecode || k == cluster.KindBucket {
			net.Inject(cluster.Addr(a), at, cluster.Abort{ID: id})
			net.Inject(cluster.Addr(a), done, cluster.AbortDone{ID: id})
		}
	}
}

// Issue 21 row 2: a request whose client went away leaves the decode
// batch, whether the Abort finds it there or reaches the workers before
// it (while it is still being prefilled), and ends once, aborted; the
// other requests complete.
func TestOpenEndedAbort(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		at       time.Duration
	}{{"1p3d-mlx5.hcl", time.Millisecond + 1}, {"1p3d-mlx5.hcl", 3 * time.Second},
		{"buckets-3.hcl", time.Millisecond + 1}, {"buckets-3.hcl", 3 * time.Second}} {
		at := tc.at
		t.Run(fmt.Sprint(tc.scenario, " abort at ", at), func(t *testing.T) {
			net, err := clustertest.New(embedded(t, tc.scenario), &source{}) // no requests of its own: io.EOF
			require.NoError(t, err)
			net.Cluster.OpenEnded()
			for i := range 3 {
				r := req(int64(i), int32(i), 4000)
				r.OutputLen = 2000 // ~40 s of decode
				net.Inject(net.Cluster.Driver, time.Millisecond, cluster.Release{Req: r})
			}
			abortAll(net, 1, at, 9*time.Second)
			net.Inject(net.Cluster.Driver, 10*time.Second, cluster.EndOfInput{})
			require.NoError(t, net.Run())
			recs := net.Cluster.Collector().Records()
			require.Len(t, recs, 3)
			for _, r := range recs {
				if r.ID == 1 {
					assert.Equal(t, "aborted", r.State)
					assert.Less(t, r.Arrival+r.E2E, 10*time.Second, "it left long before it would have ended")
				} else {
					assert.Equal(t, "completed", r.State)
				}
			}
			assert.Empty(t, net.Cluster.InFlight())
		})
	}
}

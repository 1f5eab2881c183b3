package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/cluster/clustertest"
	"github.com/pdemu/pdemu/topology"
)

// runBounded runs net, failing (not hanging) when it is still running
// past limit of emulated time: a request that never ends keeps the
// router's retries and probes going for ever.
func runBounded(t interface{ Helper() }, net *clustertest.Net, limit time.Duration) (err error) {
	t.Helper()
	type stuck struct{ msg string }
	tap := net.Tap
	net.Tap = func(from cluster.Addr, e cluster.Envelope) {
		if tap != nil {
			tap(from, e)
		}
		if net.Now() > limit {
			panic(stuck{fmt.Sprintf("still running at %v: %d of %d released requests ended",
				net.Now(), net.Cluster.Collector().Ended(), net.Cluster.Released())})
		}
	}
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(stuck)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s", s.msg)
		}
	}()
	return net.Run()
}

// The only prefill worker crashes while it prefills the only request,
// just after an open-ended run's input ended, and restarts 3 s later. The
// router waits for the restart (the fault ends), but the fault schedule
// stopped at the end of the input: the restart never came, and the
// request was retried every detection delay for ever (found by
// TestAbortsUnderFaults). The schedule runs on while a request is in
// flight; the request completes after the restart.
func TestOpenEndedRestartAfterEndOfInput(t *testing.T) {
	spec := embedded(t, "1p3d-mlx5.hcl")
	spec.Recovery.DetectionDelay = 2 * time.Millisecond
	spec.Prefill[0].Faults = []topology.NodeFault{{Kind: topology.FaultCrash, At: 3 * time.Millisecond, For: 3 * time.Second}}
	net, err := clustertest.New(spec, &source{})
	require.NoError(t, err)
	net.Cluster.OpenEnded()
	r := req(0, 0, 2000)
	net.Inject(net.Cluster.Driver, time.Millisecond, cluster.Release{Req: r})
	net.Inject(net.Cluster.Driver, 2*time.Millisecond, cluster.EndOfInput{})
	require.NoError(t, runBounded(t, net, time.Hour))
	recs := net.Cluster.Collector().Records()
	require.Len(t, recs, 1)
	assert.Equal(t, "completed", recs[0].State, recs[0].Reason)
	assert.Greater(t, recs[0].Arrival+recs[0].E2E, 3*time.Second, "it waited for the restart")
	assert.Empty(t, net.Cluster.InFlight())
}

package cluster_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/cluster/clustertest"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/topology"
)

// reseedTokens runs spec in memory and returns the per_request.csv and the
// tokens the Reseeds prefilled (with their count).
func reseedTokens(t *testing.T, spec *topology.Spec) ([]byte, int, int) {
	t.Helper()
	src, err := cluster.Source(spec, false)
	require.NoError(t, err)
	net, err := clustertest.New(spec, src)
	require.NoError(t, err)
	require.NoError(t, net.Run())
	recs := net.Cluster.Collector().Records()
	var csv bytes.Buffer
	require.NoError(t, metrics.WritePerRequest(&csv, recs))
	tokens, n := 0, 0
	for _, r := range recs {
		require.False(t, r.Failed, "request %d failed: %s", r.ID, r.Reason)
		if r.Mode == "Reseed" {
			tokens += r.AppendTokens
			n++
		}
	}
	return csv.Bytes(), tokens, n
}

// TestDPSync: with D→P sync a Reseed finds the session's backup on P
// advanced by the Direct turns since its seed, so the reseeds prefill
// fewer tokens than without (the stale context is gone); the sync's
// messages keep the run deterministic and the actors deliver them as the
// in-memory network does.
func TestDPSync(t *testing.T) {
	off := embedded(t, "reseed-tcp-loopback.hcl")
	// P's pool holds every session's backup: what is left to re-prefill is
	// what the backup missed, not what P's cache evicted.
	off.Prefill[0].KVBudgetTokens = 2_000_000
	on := *off
	on.Router.DPSync = true
	_, offTok, offN := reseedTokens(t, off)
	csv, onTok, onN := reseedTokens(t, &on)
	require.Positive(t, offN, "the scenario reseeds")
	require.Positive(t, onN)
	t.Logf("reseeds prefilled %d tokens in %d reseeds without sync, %d in %d with", offTok, offN, onTok, onN)
	assert.Less(t, float64(onTok)/float64(onN), 0.5*float64(offTok)/float64(offN),
		"sync removes most of the stale context a reseed re-prefills")

	again, _, _ := reseedTokens(t, &on)
	assert.Equal(t, csv, again, "deterministic")

	src, err := cluster.Source(&on, false)
	require.NoError(t, err)
	res, err := actors.Run(context.Background(), &on, actors.Options{Source: src})
	require.NoError(t, err)
	var viaActors bytes.Buffer
	require.NoError(t, metrics.WritePerRequest(&viaActors, res.Records))
	assert.Equal(t, string(csv), viaActors.String(), "the actors run the sync as the in-memory network does")
}

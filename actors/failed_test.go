package actors

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/testlog"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// TestBadRecordMidRunIsNotClean: a run that stops on a bad record after
// some requests (a valid record was never replayed) is partial, stopped
// by bad-record, with the error and the missing ids in its summary; it
// used to say partial: false with total = completed.
func TestBadRecordMidRunIsNotClean(t *testing.T) {
	spec := small(loadScenario(t, scenarios.Default), 4, 50)
	src, err := Source(spec, false)
	require.NoError(t, err)
	// 60 requests of src, then a failure as a trace's on a malformed record.
	bad := &failingSource{inner: src, at: 61, fail: func() (*workload.Request, error) {
		return nil, &workload.RecordError{File: "t.jsonl", Line: 501, Field: "input_length", Err: errors.New("not a number")}
	}}
	res, err := Run(context.Background(), spec, Options{Source: bad, Logger: testlog.New(t)})
	require.Error(t, err)
	var re *workload.RecordError
	require.True(t, errors.As(err, &re), "the record error stays in the chain (exit 2): %v", err)
	require.NotNil(t, res)
	s := res.Summary
	assert.True(t, s.Partial)
	assert.Equal(t, StoppedByBadRecord, s.StoppedBy)
	assert.Contains(t, s.Error, "t.jsonl:501")
	assert.Greater(t, s.Requests.Unfinished, 0)
	assert.Len(t, s.MissingIDs, s.Requests.Unfinished)
	assert.Contains(t, s.Warnings[0], "the run failed: ")
}

// TestCleanRunHasNoError: a run that succeeds has neither error nor
// missing ids (summary.json keeps its shape: both are omitted).
func TestCleanRunHasNoError(t *testing.T) {
	spec := small(loadScenario(t, scenarios.Default), 2, 3)
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
	require.NoError(t, err)
	assert.Empty(t, res.Summary.Error)
	assert.Empty(t, res.Summary.MissingIDs)
	assert.False(t, res.Summary.Partial)
}

// TestFaultAfterTheEndIsListedNotReached: a fault scheduled after the
// run's end left no trace; it is listed as not reached, with a warning.
func TestFaultAfterTheEndIsListedNotReached(t *testing.T) {
	src, err := scenarios.Read("1p3d-mlx5.hcl")
	require.NoError(t, err)
	src = append(src, "\ndecode \"d9\" {\n  gpu = \"H200-SXM\"\n  model = \"qwen3-coder-30b-a3b\"\n  crash {\n    at = \"8000h\"\n  }\n}\nlink \"p0\" \"d9\" {\n  transport = \"rdma\"\n  device = \"mlx5_9\"\n  bandwidth = \"200Gbps\"\n}\n"...)
	spec, err := topology.Parse("<embedded>/x.hcl", src, topology.Options{})
	require.NoError(t, err)
	spec = small(spec, 2, 3)
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
	require.NoError(t, err)
	f := res.Summary.Faults
	require.NotNil(t, f)
	require.Len(t, f.NotReached, 1)
	assert.Equal(t, "d9", f.NotReached[0].Node)
	assert.Empty(t, res.Faults, "it never happened: not in faults.csv")
	found := false
	for _, w := range res.Summary.Warnings {
		found = found || strings.Contains(w, "not reached")
	}
	assert.True(t, found, "%v", res.Summary.Warnings)
}

// TestBucketCrashDetected: a whole bucket's crash is detected (the
// global router's probe), and the reason of a request that waited for it
// names it. Bucket crashes were never "detected" when a lost request's
// Retry reached the global router before the probe.
func TestBucketCrashDetected(t *testing.T) {
	src := []byte("extends = \"buckets-3.hcl\"\nbucket \"short\" {\n  crash {\n    at = \"20s\"\n    restart_after = \"30s\"\n  }\n}\n")
	spec, err := topology.Parse("<embedded>/b.hcl", src, topology.Options{})
	require.NoError(t, err)
	spec.Workload.MaxRequests = 400
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
	require.NoError(t, err)
	require.Len(t, res.Faults, 1)
	f := res.Faults[0]
	assert.GreaterOrEqual(t, f.Detected, f.At, "detected")
	for _, r := range res.Records {
		if strings.Contains(r.Reason, "fault: bucket down") {
			assert.Contains(t, r.Reason, "fault: bucket down (bucket:short crashed)")
		}
	}
}

// TestRestartsCountedForEveryNodeKind: a fused instance's crash is no
// actor failure (actor_restarts misses it); node_restarts counts it, as
// it counts decode workers' and buckets'.
func TestRestartsCountedForEveryNodeKind(t *testing.T) {
	src := []byte("extends = \"buckets-3.hcl\"\nbucket \"short\" {\n  crash {\n    at = \"20s\"\n    restart_after = \"30s\"\n  }\n}\n" +
		"dynamic \"fused\" {\n  content {\n    dynamic \"crash\" {\n      for_each = fused.key == 0 ? [1] : []\n      content {\n        at = \"60s\"\n        restart_after = \"5s\"\n      }\n    }\n  }\n}\n")
	spec, err := topology.Parse("<embedded>/r.hcl", src, topology.Options{})
	if err != nil {
		t.Skipf("buckets-3 has no dynamic fused block to override: %v", err)
	}
	spec.Workload.MaxRequests = 400
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
	require.NoError(t, err)
	nr := res.Summary.Faults.NodeRestarts
	assert.Equal(t, 1, nr["bucket:short"], "%v", nr)
	fusedRestarts := 0
	for n, c := range nr {
		if n != "bucket:short" {
			fusedRestarts += c
		}
	}
	assert.Positive(t, fusedRestarts, "a fused instance's restart: %v", nr)
}

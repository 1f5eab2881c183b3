package actors

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/workload"
)

// badAfter passes n requests of src, then fails as a trace does on a
// malformed record.
type badAfter struct {
	src workload.Source
	n   int
}

func (b *badAfter) Next() (*workload.Request, error) {
	if b.n == 0 {
		return nil, &workload.RecordError{File: "t.jsonl", Line: 501, Field: "input_length", Err: errors.New("not a number")}
	}
	b.n--
	return b.src.Next()
}

// TestBadRecordMidRunIsNotClean: a run that stops on a bad record after
// some requests (a valid record was never replayed) is partial, stopped
// by bad-record, with the error and the missing ids in its summary; it
// used to say partial: false with total = completed.
func TestBadRecordMidRunIsNotClean(t *testing.T) {
	spec := small(loadScenario(t, scenarios.Default), 4, 50)
	src, err := Source(spec, false)
	require.NoError(t, err)
	res, err := Run(context.Background(), spec, Options{Source: &badAfter{src: src, n: 60}, Logger: testLogger(t)})
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
	res, err := Run(context.Background(), spec, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	assert.Empty(t, res.Summary.Error)
	assert.Empty(t, res.Summary.MissingIDs)
	assert.False(t, res.Summary.Partial)
}

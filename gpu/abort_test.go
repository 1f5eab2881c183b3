package gpu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Abort takes a request out of the worker wherever it is, releases its
// KV reservation and ends it once as aborted; the other requests go on.
func TestDecodeAbort(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		setup func(w *DecodeWorker) *Job // returns the job to abort (at 10 ms)
		held  bool
	}{
		{"running", func(w *DecodeWorker) *Job {
			return admitted(w, ms, &Job{Req: req(0, 1, 0, 200, 1000)})
		}, true},
		{"appending (its pass on the GPU)", func(w *DecodeWorker) *Job {
			admitted(w, 0, &Job{Req: req(0, 1, 0, 100, 2)})
			w.Advance(ms)
			j := &Job{Req: req(1, 1, 1, 50_000, 5)} // a long append: 16 ms chunks
			w.Run(2*ms, j)
			require.Same(t, j, w.cur)
			return j
		}, true},
		{"ready, no batch slot", func(w *DecodeWorker) *Job {
			w.cfg.MaxRunning = 1
			admitted(w, 0, &Job{Req: req(9, 9, 0, 100, 10_000)}) // busy
			return admitted(w, ms, &Job{Req: req(0, 1, 0, 200, 5)})
		}, true},
		{"waiting for room", func(w *DecodeWorker) *Job {
			admitted(w, 0, &Job{Req: req(9, 9, 0, 50_000, 10_000)}) // big
			j := &Job{Req: req(0, 1, 0, 50_000, 5)}
			w.Run(ms, j)
			return j
		}, true},
		{"admitted, KV not arrived", func(w *DecodeWorker) *Job {
			j := &Job{Req: req(0, 1, 0, 200, 5)}
			w.Admit(0, j)
			return j
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newDecode(t, 100_000)
			j := tc.setup(w)
			w.Ready()
			usedBefore, inBefore := w.Used(), w.Running()+w.Queued()
			held := w.Abort(10*ms, j.Req.ID)
			require.Equal(t, tc.held, held)
			evs := w.Ready().Out
			if !held {
				assert.Empty(t, evs)
				return
			}
			if j == w.cur && j.aborting {
				// The pass in flight completes first.
				w.Advance(time.Second)
				evs = w.Ready().Out
			}
			var failed []*Job
			for _, e := range evs {
				if e.Kind == EvFailed {
					failed = append(failed, e.Job)
				}
				assert.NotEqual(t, EvDone, e.Kind, "nothing completes because of an abort")
			}
			require.Equal(t, []*Job{j}, failed)
			assert.Equal(t, ReasonAborted, j.Failed)
			assert.Positive(t, j.Done)
			assert.Equal(t, inBefore-1, w.Running()+w.Queued(), "the request left the worker")
			assert.LessOrEqual(t, w.Used(), usedBefore)
			assert.False(t, w.Abort(2*time.Second, j.Req.ID), "an aborted request is gone")
		})
	}
}

// admitted admits j to w at 0 and lets its KV arrive at arrive.
func admitted(w *DecodeWorker, arrive time.Duration, j *Job) *Job {
	w.Admit(0, j)
	w.Arrive(arrive, j)
	return j
}

// An aborted request's reservation is released: a session that was
// running is idle (resident, evictable) afterwards, and a request waiting
// for the room the aborted one held gets in.
func TestDecodeAbortFreesRoom(t *testing.T) {
	w := newDecode(t, 1000)
	a := admitted(w, 0, &Job{Req: req(0, 1, 0, 600, 300)})
	b := &Job{Req: req(1, 2, 0, 600, 5)}
	w.Run(time.Millisecond, b) // does not fit beside a
	w.Ready()
	require.Equal(t, 1, w.Queued())
	require.True(t, w.Abort(2*time.Millisecond, a.Req.ID))
	w.Advance(3 * time.Millisecond)
	assert.Zero(t, w.Queued(), "b got a's room")
	assert.Equal(t, 1, w.Running())
}

// A fused worker aborts a request waiting for memory or running, and the
// memory it held admits the next one.
func TestFusedAbort(t *testing.T) {
	f, err := NewFusedWorker(FusedConfig{Name: "f0", Budget: 1000, Rho: 1}, linearCost{})
	require.NoError(t, err)
	a := &Job{Req: req(0, 1, 0, 500, 400)}
	b := &Job{Req: req(1, 2, 0, 500, 5)}
	f.Submit(0, a)
	f.Submit(time.Millisecond, b) // waits: a holds 900 of 1000
	f.Ready()
	require.Equal(t, 1, len(f.waitMem))
	require.True(t, f.Abort(2*time.Millisecond, a.Req.ID))
	evs := f.Ready().Out
	var failed []*Job
	for _, e := range evs {
		if e.Kind == EvFailed {
			failed = append(failed, e.Job)
		}
	}
	assert.Equal(t, []*Job{a}, failed)
	assert.Equal(t, ReasonAborted, a.Failed)
	assert.Empty(t, f.waitMem, "b got a's memory")
	assert.True(t, f.Abort(3*time.Millisecond, b.Req.ID))
	assert.Zero(t, f.Used())
	assert.False(t, f.Abort(4*time.Millisecond, 99))
}

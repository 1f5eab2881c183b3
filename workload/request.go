// Package workload produces the requests pdemu replays: a seeded synthetic
// agentic generator and (elsewhere in this package) loaders for real traces,
// plus the Driver that releases them in open or closed loop.
//
// Contract: a Source yields requests in non-decreasing Arrival order, with
// dense IDs starting at 0 and dense Session indexes; turns of one session
// come in turn order. Sources never panic on bad input: they return an error
// naming the file, the line (or record index) and the field.
//
// docs/CONTRIBUTING.md has the recipe for adding a trace format: the
// files to touch, in order, and the test that proves it.
package workload

import "time"

// Request is one LLM call of a session. It is immutable once emitted.
type Request struct {
	ID          int64  // dense, from 0, in emission order
	Session     int32  // dense session index, from 0
	SessionName string // the trace's own session id (or a generated one)
	Turn        int    // 0-based turn index inside the session

	// Arrival is the emulated arrival time for open-loop replay (and the
	// start time of turn 0 in closed loop).
	Arrival time.Duration
	// Think is the gap between the predecessor's completion and this
	// request's release in closed-loop replay (0 for turn 0).
	Think time.Duration

	InputLen  int // prompt tokens
	OutputLen int // generated tokens (>= 1)

	// Blocks are prefix-chained hashes of the full blocks of the prompt:
	// Blocks[i] identifies tokens [0, (i+1)*BlockTokens) of the prompt, so two
	// prompts share Blocks[i] only if they share that whole prefix.
	//
	// Blocks is read-only and may share its backing array with other
	// requests: the turns of a session whose prompts extend each other hold
	// prefixes of one append-only array (the agentic generator, and the
	// Mooncake loader for lines with a session_id). Sources only append to
	// such an array beyond the length of every request already emitted, and
	// give each request cap(Blocks) == len(Blocks) where they share. A
	// consumer must never write to Blocks[i]; to build on it, copy it (or
	// append, which copies when cap == len).
	Blocks      []uint64
	BlockTokens int
	// AppendLen is the number of prompt tokens that are new with respect to
	// the session's previous turn (prompt + output); for turn 0 it is the
	// whole prompt.
	AppendLen int
	// ReuseCap, when > 0, caps how many leading prompt tokens a decode
	// worker may reuse from the session's resident KV (its previous prompt
	// and output). Trace replays leave it 0: a turn's prompt extends the
	// previous prompt and its output. pdemu serve sets it to the previous
	// prompt's length when the client did not send the previous answer
	// back in full, so an answer the client replaced is not counted cached.
	ReuseCap int
	// Last marks the session's final turn when the source knows it; the
	// closed-loop Driver then does not read ahead looking for a next turn.
	Last bool
}

// Source yields requests; Next returns io.EOF when done.
type Source interface {
	Next() (*Request, error)
}

// fromSlab returns the next element of *slab, a zero value, refilling the
// slab with reqSlab new elements when it is empty: one allocation per
// reqSlab elements handed out instead of one each.
func fromSlab[T any](slab *[]T) *T {
	if len(*slab) == 0 {
		*slab = make([]T, reqSlab)
	}
	v := &(*slab)[0]
	*slab = (*slab)[1:]
	return v
}

package workload

import (
	"fmt"

	"github.com/pdemu/pdemu/internal/splitmix"
)

// emitter holds the bookkeeping shared by every loader: dense IDs, dense
// session indexes in order of first appearance, the MaxRequests cap and
// the skipped-record counter.
type emitter struct {
	nextID      int64
	nextSession int32
	max         int
	skipped     int
	zeroOutputs int // requests whose 0 output tokens were replayed as 1
}

func (e *emitter) capped() bool { return e.max > 0 && e.nextID >= int64(e.max) }

func (e *emitter) newSession() int32 {
	s := e.nextSession
	e.nextSession++
	return s
}

func (e *emitter) stamp(r *Request) *Request {
	r.ID = e.nextID
	e.nextID++
	return r
}

// Skipped implements Skipper.
func (e *emitter) Skipped() int { return e.skipped }

// Warnings implements Warner.
func (e *emitter) Warnings() []string {
	if e.zeroOutputs == 0 {
		return nil
	}
	if e.zeroOutputs == 1 {
		return []string{"1 request records 0 output tokens; it is replayed with 1 output token (the first token ends it)"}
	}
	return []string{fmt.Sprintf("%d requests record 0 output tokens; each is replayed with 1 output token (the first token ends it)", e.zeroOutputs)}
}

// prevTurn remembers what appendLen needs of a session's previous turn.
type prevTurn struct {
	in, out int
	blocks  []uint64 // the previous request's Blocks (shared, never modified)
	bt      int
}

// appendLen computes AppendLen for a turn following prev: the prompt tokens
// not covered by the previous turn's prompt+output. When the new prompt
// starts with all full blocks of the previous prompt it is assumed to extend
// the whole previous context; otherwise only the common block prefix counts.
func appendLen(in int, blocks []uint64, bt int, prev *prevTurn) int {
	if prev == nil {
		return in
	}
	full := len(prev.blocks)
	if prev.bt > 0 {
		full = min(full, prev.in/prev.bt)
	}
	common := 0
	for common < full && common < len(blocks) && blocks[common] == prev.blocks[common] {
		common++
	}
	shared := common * bt
	if common == full {
		shared = prev.in + prev.out
	}
	return max(0, in-shared)
}

// chain is the prefix-chaining step used for synthesized hashes: the hash of
// block i depends on the hash of block i-1 and the block's content key.
func chain(prev, content uint64) uint64 {
	return splitmix.Mix64(prev*0x9e3779b97f4a7c15 ^ content ^ 0x2545f4914f6cdd1d)
}

// fnv64 hashes a string (FNV-1a).
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

package workload

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Trace format names understood by Open.
const (
	FormatMooncake   = "mooncake"    // Mooncake FAST'25 JSONL (timestamp ms, 512-token hash_ids)
	FormatBailian    = "bailian"     // Qwen Bailian JSONL (chat_id/parent_chat_id chains, 16-token hash_ids)
	FormatClaudeCode = "claude-code" // kv-cache-tester Claude Code sessions, a directory of trace_*.json
	FormatAzure      = "azure"       // Azure LLM inference CSV (TIMESTAMP, ContextTokens, GeneratedTokens)
	FormatTraceLab   = "tracelab"    // TraceLab sanitized round traces (JSONL)
)

func unknownFormat(f string) error {
	return fmt.Errorf("workload: unknown trace format %q (known formats: %s)", f, strings.Join(Formats(), ", "))
}

// LoadOptions tunes the trace loaders. The zero value is a strict, complete
// load with each format's defaults.
type LoadOptions struct {
	// SkipBad drops malformed records (see Skipper) instead of failing on
	// the first one.
	SkipBad bool
	// MaxRequests stops the source (io.EOF) after this many requests; 0
	// means all.
	MaxRequests int
	// BlockTokens overrides the block size. For formats that carry hashes
	// (mooncake: 512, bailian: 16, claude-code: the file's block_size) it
	// declares what the hash ids cover; for formats without hashes (azure,
	// tracelab) it is the size of the synthesized blocks (default 16).
	BlockTokens int
	// FullBlocks drops a trailing hash id that covers a partial block
	// (mooncake and bailian hash ceil(input/B) blocks), so that Blocks holds
	// full blocks only, as request.go describes. Off by default to keep the
	// published statistics (Mooncake's ideal reuse 0.640 becomes 0.659).
	FullBlocks bool
	// Seed salts synthesized hashes and drives randomized session starts.
	Seed uint64

	// Session starts for per-session formats (claude-code, tracelab). By
	// default every session starts at time 0 (tracelab: see TraceTime).
	// SessionRate > 0 starts sessions as a Poisson process with this mean
	// rate (sessions per second), in file order. MaxConcurrent > 0 starts
	// sessions so that at most that many overlap in the trace's own
	// timeline: session k starts when the earliest of the running sessions
	// ends (its last request's arrival plus its recorded api time). That is
	// a staggered start computed from the recorded durations, not a live
	// limit: in closed-loop replay, where real durations differ, the
	// number of concurrently active sessions can differ from the cap. Set
	// at most one of the two.
	SessionRate   float64
	MaxConcurrent int
	// TraceTime (tracelab) keeps each session's recorded wall-clock start
	// (relative to the earliest round of the file) instead of starting all
	// sessions at 0; it cannot be combined with SessionRate/MaxConcurrent.
	TraceTime bool
	// ShareSystemPrefix gives the tools+system prompt prefix global block
	// ids so that sessions share it (claude-code: the first
	// ceil((tool_tokens+system_tokens)/block_size) blocks; tracelab: the
	// prefix_tokens of round 0, keyed by provider and model). Off, hash
	// ids stay session-local as published.
	ShareSystemPrefix bool

	// ReorderWindow lets streaming formats (mooncake, bailian, azure) accept
	// records that are out of timestamp order by at most this much: records
	// are held in a bounded buffer and emitted sorted. A record earlier than
	// one already emitted is a bad record. Default 0: the file must be
	// sorted.
	ReorderWindow time.Duration
	// SessionIdle bounds the memory of formats whose sessions are only
	// implied by later records (bailian parent chains, mooncake session_id
	// or InferSessions): a session not seen for this long (trace time) is
	// forgotten, and a later record naming it starts a new session. 0 means
	// the default of one hour; negative keeps every session forever.
	SessionIdle time.Duration
	// InferSessions (mooncake without session_id) makes a request whose
	// hash_ids extend the full-block prompt of the latest turn of an
	// earlier, still-live inferred session the next turn of that session,
	// instead of a session of its own.
	InferSessions bool
}

func (o LoadOptions) idle() time.Duration {
	if o.SessionIdle == 0 {
		return time.Hour
	}
	return o.SessionIdle
}

func (o LoadOptions) validate() error {
	if o.MaxRequests < 0 {
		return fmt.Errorf("workload: LoadOptions.MaxRequests %d must be >= 0", o.MaxRequests)
	}
	if o.BlockTokens < 0 {
		return fmt.Errorf("workload: LoadOptions.BlockTokens %d must be >= 0", o.BlockTokens)
	}
	if o.ReorderWindow < 0 {
		return fmt.Errorf("workload: LoadOptions.ReorderWindow %v must be >= 0", o.ReorderWindow)
	}
	if o.SessionRate < 0 || math.IsNaN(o.SessionRate) || math.IsInf(o.SessionRate, 0) {
		return fmt.Errorf("workload: LoadOptions.SessionRate %v must be a finite rate >= 0", o.SessionRate)
	}
	if o.MaxConcurrent < 0 {
		return fmt.Errorf("workload: LoadOptions.MaxConcurrent %d must be >= 0", o.MaxConcurrent)
	}
	n := 0
	for _, set := range []bool{o.SessionRate > 0, o.MaxConcurrent > 0, o.TraceTime} {
		if set {
			n++
		}
	}
	if n > 1 {
		return errors.New("workload: set at most one of LoadOptions.SessionRate, MaxConcurrent and TraceTime")
	}
	return nil
}

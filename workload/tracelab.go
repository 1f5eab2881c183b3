package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/pdemu/pdemu/internal/minheap"
	"github.com/pdemu/pdemu/internal/splitmix"

	"github.com/pdemu/pdemu/internal/regular"
)

// TraceLab replays TraceLab sanitized round traces (uw-syfi/TraceLab): one
// JSONL row per model round with `session_id`, `round_index`,
// `input_tokens_total`, `prefix_tokens` (the provider-cached prefix),
// `newly_append_tokens`, `output_tokens`, `provider`, `model` and
// `timing_events[]` (`event_type`, RFC 3339 `timestamp`).
//
// Decisions:
//   - The format is small and grouped by session, not sorted by time, so
//     it is loaded whole (rows are kept compactly, without their events).
//   - A round arrives when its last input event (user_message or
//     tool_result) happened (the first event if it has none) and ends with
//     its last event; Think is the gap from the previous round's end to
//     this arrival. Arrival of round r is session start + (arrival_r −
//     arrival_0), never earlier than round r−1.
//   - Session starts follow LoadOptions (all at 0 by default, Poisson,
//     staggered MaxConcurrent, or TraceTime for the recorded wall clock);
//     sessions are taken in order of first appearance, rounds by
//     round_index.
//   - Blocks are synthesized (LoadOptions.BlockTokens, default 16) so that
//     round r shares exactly floor(prefix_tokens/B) blocks with round r−1's
//     prompt+output, and everything else is new. Round 0's prefix_tokens
//     (cached system prompt and tools) are session-local, or shared by all
//     sessions with the same provider and model under ShareSystemPrefix.
//   - AppendLen = input − min(prefix_tokens, previous prompt+output), i.e.
//     newly_append_tokens in the usual case.
type TraceLab struct {
	emitter
	name string
	opts LoadOptions
	bt   int
	h    minheap.Heap[*tlSession] // by lessTLSession
	err  error
}

type tlRound struct {
	line     int
	idx      int
	in       int
	prefix   int
	out      int
	arrival  time.Duration // Unix ns
	end      time.Duration
	hasTimes bool
}

type tlSession struct {
	name            string
	provider, model string
	order           int
	rounds          []tlRound
	start, t0       time.Duration
	next            int
	sess            int32
	salt            uint64
	at              time.Duration // replay arrival of the next round
	ctx             []uint64      // full blocks of the previous prompt+output
	prevIn, prevOut int
	prevEnd         time.Duration
	prevArrival     time.Duration
}

type tlJSON struct {
	SessionID         json.RawMessage `json:"session_id"`
	RoundIndex        *float64        `json:"round_index"`
	InputTokensTotal  *float64        `json:"input_tokens_total"`
	PrefixTokens      *float64        `json:"prefix_tokens"`
	NewlyAppendTokens *float64        `json:"newly_append_tokens"`
	OutputTokens      *float64        `json:"output_tokens"`
	Provider          *string         `json:"provider"`
	Model             *string         `json:"model"`
	TimingEvents      []struct {
		EventType *string `json:"event_type"`
		Timestamp *string `json:"timestamp"`
	} `json:"timing_events"`
}

// OpenTraceLab loads a TraceLab round trace file.
func OpenTraceLab(path string, opts LoadOptions) (*TraceLab, error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	return NewTraceLab(f, path, opts)
}

// NewTraceLab loads a TraceLab round trace from r (read whole; name is
// used in errors).
func NewTraceLab(r io.Reader, name string, opts LoadOptions) (*TraceLab, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	t := &TraceLab{emitter: emitter{max: opts.MaxRequests}, name: name, opts: opts, bt: opts.BlockTokens}
	t.h.Less = lessTLSession
	if t.bt == 0 {
		t.bt = 16
	}
	byName := map[string]*tlSession{}
	var sessions []*tlSession
	lr := newLineReader(r)
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("workload: %s: %w", name, err)
		}
		sid, prov, model, rd, err := t.parse(line, lr.line)
		if err != nil {
			if opts.SkipBad {
				t.skipped++
				continue
			}
			return nil, locate(name, lr.line, "", err)
		}
		s := byName[sid]
		if s == nil {
			s = &tlSession{name: sid, provider: prov, model: model, order: len(sessions), sess: -1}
			byName[sid] = s
			sessions = append(sessions, s)
		}
		s.rounds = append(s.rounds, rd)
	}
	kept := sessions[:0]
	for _, s := range sessions {
		sort.SliceStable(s.rounds, func(i, j int) bool { return s.rounds[i].idx < s.rounds[j].idx })
		rounds := s.rounds[:0]
		for i, rd := range s.rounds {
			if i > 0 && rd.idx == s.rounds[i-1].idx {
				if opts.SkipBad {
					t.skipped++
					continue
				}
				return nil, locate(name, rd.line, "", badField("round_index", "duplicate round %d of session %q", rd.idx, s.name))
			}
			rounds = append(rounds, rd)
		}
		s.rounds = rounds
		// Rounds without events take their times from their neighbours.
		first := -1
		for i := range s.rounds {
			rd := &s.rounds[i]
			switch {
			case rd.hasTimes:
				if first < 0 {
					first = i
				}
			case first >= 0:
				rd.arrival, rd.end = s.rounds[i-1].end, s.rounds[i-1].end
			}
		}
		for i := 0; i < first; i++ {
			s.rounds[i].arrival, s.rounds[i].end = s.rounds[first].arrival, s.rounds[first].arrival
		}
		s.t0 = s.rounds[0].arrival
		s.salt = splitmix.Mix64(opts.Seed ^ fnv64(s.name) ^ 0x7ace1ab)
		kept = append(kept, s)
	}
	sessions = kept
	// Session starts.
	if opts.TraceTime && len(sessions) > 0 {
		t0 := sessions[0].t0
		for _, s := range sessions {
			t0 = min(t0, s.t0)
		}
		for _, s := range sessions {
			s.start = s.t0 - t0
		}
	} else {
		plan := newStartPlan(opts)
		for _, s := range sessions {
			s.start = plan.next()
			last := s.rounds[len(s.rounds)-1]
			plan.opened(s.start, max(0, last.end-s.t0))
		}
	}
	for _, s := range sessions {
		s.at = s.start
		t.h.Push(s)
	}
	return t, nil
}

func (t *TraceLab) parse(line []byte, n int) (sid, provider, model string, rd tlRound, err error) {
	var j tlJSON
	if err = json.Unmarshal(line, &j); err != nil {
		return
	}
	rd.line = n
	var ok bool
	if sid, ok, err = idString("session_id", j.SessionID); err != nil {
		return
	} else if !ok {
		err = badField("session_id", "missing")
		return
	}
	if rd.idx, err = intField("round_index", j.RoundIndex, 0); err != nil {
		return
	}
	if rd.prefix, err = intField("prefix_tokens", j.PrefixTokens, 0); err != nil {
		return
	}
	if j.InputTokensTotal != nil {
		if rd.in, err = intField("input_tokens_total", j.InputTokensTotal, 0); err != nil {
			return
		}
	} else {
		var app int
		if app, err = intField("newly_append_tokens", j.NewlyAppendTokens, 0); err != nil {
			err = badField("input_tokens_total", "missing (and newly_append_tokens unusable)")
			return
		}
		rd.in = rd.prefix + app
	}
	if rd.prefix > rd.in {
		err = badField("prefix_tokens", "%d exceeds input_tokens_total %d", rd.prefix, rd.in)
		return
	}
	if rd.out, err = outputField("output_tokens", j.OutputTokens, &t.zeroOutputs); err != nil {
		return
	}
	if j.Provider != nil {
		provider = *j.Provider
	}
	if j.Model != nil {
		model = *j.Model
	}
	var first, lastIn, last time.Duration
	hasIn := false
	for k, e := range j.TimingEvents {
		if e.Timestamp == nil {
			continue
		}
		ts, perr := time.Parse(time.RFC3339Nano, *e.Timestamp)
		if perr != nil || ts.Year() < 1971 || ts.Year() > 2200 {
			err = badField("timing_events", "[%d].timestamp %q is not an RFC 3339 time", k, *e.Timestamp)
			return
		}
		at := time.Duration(ts.UnixNano())
		if !rd.hasTimes {
			first, last, rd.hasTimes = at, at, true
		}
		first, last = min(first, at), max(last, at)
		if e.EventType != nil && (*e.EventType == "user_message" || *e.EventType == "tool_result") {
			if !hasIn || at > lastIn {
				lastIn, hasIn = at, true
			}
		}
	}
	rd.arrival, rd.end = first, last
	if hasIn {
		rd.arrival = lastIn
	}
	return
}

// lessTLSession orders sessions by their next round's start, then their
// order in the file (a total order).
func lessTLSession(a, b **tlSession) bool {
	if (*a).at != (*b).at {
		return (*a).at < (*b).at
	}
	return (*a).order < (*b).order
}

// Close implements io.Closer (the file is read whole when opened).
func (t *TraceLab) Close() error { return nil }

// Next implements Source.
func (t *TraceLab) Next() (*Request, error) {
	if t.capped() || t.h.Len() == 0 {
		return nil, io.EOF
	}
	s := t.h.Pop()
	r := t.emit(s)
	if s.next < len(s.rounds) {
		s.at = max(s.at, satAdd(s.start, s.rounds[s.next].arrival-s.t0))
		t.h.Push(s)
	} else {
		s.rounds, s.ctx = nil, nil
	}
	return t.stamp(r), nil
}

func (t *TraceLab) emit(s *tlSession) *Request {
	rd := s.rounds[s.next]
	turn := s.next
	s.next++
	if s.sess < 0 {
		s.sess = t.newSession()
	}
	bt := t.bt
	n := rd.in / bt
	blocks := make([]uint64, n)
	keep := min(rd.prefix/bt, n)
	r := &Request{
		Session: s.sess, SessionName: s.name, Turn: turn, Arrival: s.at,
		InputLen: rd.in, OutputLen: rd.out, Blocks: blocks, BlockTokens: bt, AppendLen: rd.in,
	}
	var h uint64
	if turn == 0 {
		key := s.salt
		if t.opts.ShareSystemPrefix {
			key = splitmix.Mix64(fnv64(s.provider+"\x00"+s.model) ^ t.opts.Seed)
		}
		for i := 0; i < keep; i++ {
			h = chain(h, key+uint64(i))
			blocks[i] = h
		}
	} else {
		keep = min(keep, len(s.ctx))
		copy(blocks, s.ctx[:keep])
		if keep > 0 {
			h = blocks[keep-1]
		}
		r.Think = max(0, rd.arrival-s.prevEnd)
		r.AppendLen = max(0, rd.in-min(rd.prefix, s.prevIn+s.prevOut))
	}
	salt := splitmix.Mix64(s.salt ^ uint64(turn+1)*0x9e3779b97f4a7c15)
	for i := keep; i < n; i++ {
		h = chain(h, salt+uint64(i))
		blocks[i] = h
	}
	// Context for the next round: this prompt plus the output.
	ctxN := (rd.in + rd.out) / bt
	ctx := append(s.ctx[:0], blocks...)            // s.ctx is private: reuse its array
	osalt := splitmix.Mix64(salt ^ 0x6f7574707574) // "output"
	for i := n; i < ctxN; i++ {
		h = chain(h, osalt+uint64(i))
		ctx = append(ctx, h)
	}
	s.ctx = ctx
	s.prevIn, s.prevOut, s.prevEnd = rd.in, rd.out, rd.end
	return r
}

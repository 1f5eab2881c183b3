package workload

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/pdemu/pdemu/internal/splitmix"

	"github.com/pdemu/pdemu/internal/minheap"
)

// Agentic is a seeded synthetic generator of agentic coding sessions: each
// session starts with a shared system+tools prefix plus a first message, and
// every later turn re-sends the whole conversation (previous prompt and
// output) plus a small append (tool results, user text), after a think time.
//
// Distributions: appends and outputs are log-normal around their means
// (σ=0.8), with 2 % of appends drawn uniformly from 4,096–16,383 tokens
// (large tool outputs; half of them exceed τ_append=8192); think times and session start gaps are
// exponential. Requests come out in arrival order using O(sessions) memory,
// so arbitrarily long workloads stream.
//
// Open-loop arrival of turn t is arrival(t-1) + think(t) + a nominal service
// time of 20 ms per output token of turn t-1; closed-loop replay uses Think
// and ignores it.
type Agentic struct {
	cfg  AgenticConfig
	seed uint64
	rng  *rand.Rand
	h    minheap.Heap[*genSession] // started sessions
	// waiting are the sessions not started yet, in start order: their
	// first arrivals only grow with their index, so they are already in
	// the heap's (arrival, index) order and wait outside it, which keeps
	// the heap as small as the sessions in progress (all 41,667 sessions
	// of a 1M-request run were in it).
	waiting []*genSession
	nextID  int64
	max     int64
	reqs    []Request // make's slab
	// noBlocks: requests built from now on carry no Blocks (LengthsOnly).
	noBlocks bool
}

// reqSlab is how many Requests make allocates at once: one allocation per
// request was the generator's largest share of a replay's. Requests are
// immutable once emitted and only handled by pointer, so sharing an array
// changes nothing but when the memory is freed (with its last Request).
const reqSlab = 64

// blocksHint bounds the blocks pre-sized for a session's prompt.
const blocksHint = 1 << 14

type genSession struct {
	idx     int32
	turn    int
	turns   int
	prevIn  int
	prevOut int
	arrival time.Duration
	at      time.Duration // the pending turn's arrival (the heap's key)
	// pending is the session's next request; nil for a session that has
	// not started: its first turn's draws wait in first, and its Request
	// and blocks are only built when it is due (Next), so that the
	// sessions waiting to start hold ~0.1 KB each, not their first prompt
	// (41,667 sessions' first prompts were ~60 MB of a 1M-request run's
	// live heap).
	pending *Request
	first   turnDraw
	salt    uint64
	blocks  []uint64 // the session's prompt blocks so far (shared backing array)
	name    string   // SessionName, formatted once per session
}

// lessSession orders sessions by their pending request's arrival, then
// index (a total order).
func lessSession(a, b **genSession) bool {
	x, y := *a, *b
	if x.at != y.at {
		return x.at < y.at
	}
	return x.idx < y.idx
}

// AgenticConfig configures the agentic generator. It mirrors
// topology.Generator. Unless Exact is set, zero fields take the defaults
// of GeneratorDefaults.
type AgenticConfig struct {
	// Exact takes every field as given: a zero is zero (no shared system
	// prefix, no think time, every session starting at once), never a
	// default. For configurations whose defaults were already applied, such
	// as a scenario's generator block, where a 0 is what the user wrote.
	Exact bool

	Sessions       int           // number of sessions (16)
	Turns          int           // turns per session (24)
	SystemTokens   int           // shared system+tools prefix (4000)
	FirstTokens    int           // mean first user message (2000)
	AppendTokens   int           // mean tokens appended per turn (600)
	OutputTokens   int           // mean output tokens per turn (150)
	ThinkTime      time.Duration // mean think/tool time between turns (2.5s)
	SessionStagger time.Duration // mean gap between session starts (1s)
	BlockTokens    int           // block size of the generated hashes (24)
}

// NewAgentic returns a generator; maxRequests 0 means no cap.
func NewAgentic(cfg AgenticConfig, seed uint64, maxRequests int) (*Agentic, error) {
	if !cfg.Exact {
		cfg = GeneratorDefaults(cfg)
	}
	if cfg.Sessions < 1 || cfg.Turns < 1 || cfg.BlockTokens < 1 || cfg.OutputTokens < 1 || cfg.FirstTokens < 1 || cfg.AppendTokens < 1 {
		return nil, fmt.Errorf("workload: agentic generator needs sessions, turns, block_tokens, output_tokens, first_tokens and append_tokens >= 1 (got %d, %d, %d, %d, %d, %d)",
			cfg.Sessions, cfg.Turns, cfg.BlockTokens, cfg.OutputTokens, cfg.FirstTokens, cfg.AppendTokens)
	}
	if cfg.SystemTokens < 0 || cfg.ThinkTime < 0 || cfg.SessionStagger < 0 {
		return nil, fmt.Errorf("workload: agentic generator needs system_tokens, think_time and session_stagger >= 0 (got %d, %v, %v)",
			cfg.SystemTokens, cfg.ThinkTime, cfg.SessionStagger)
	}
	g := &Agentic{cfg: cfg, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), max: int64(maxRequests)}
	var start time.Duration
	sessions := make([]*genSession, 0, cfg.Sessions)
	for i := 0; i < cfg.Sessions; i++ {
		if i > 0 {
			start += g.expDur(cfg.SessionStagger)
		}
		s := &genSession{idx: int32(i), turns: cfg.Turns, arrival: start, salt: splitmix.Mix64(seed ^ uint64(i+1)*0xbf58476d1ce4e5b9)}
		// The random draws in the order they always were (every
		// session's first turn now); the Request when the session starts.
		s.first = g.draw(s)
		s.at = s.arrival
		sessions = append(sessions, s)
	}
	g.h.Less = lessSession
	g.waiting = sessions
	return g, nil
}

// GeneratorDefaults fills zero fields with pdemu's defaults.
func GeneratorDefaults(c AgenticConfig) AgenticConfig {
	orDefault(&c.Sessions, 16)
	orDefault(&c.Turns, 24)
	orDefault(&c.SystemTokens, 4000)
	orDefault(&c.FirstTokens, 2000)
	orDefault(&c.AppendTokens, 600)
	orDefault(&c.OutputTokens, 150)
	orDefault(&c.BlockTokens, 24)
	orDefault(&c.ThinkTime, 2500*time.Millisecond)
	orDefault(&c.SessionStagger, time.Second)
	return c
}

// Next implements Source.
func (g *Agentic) Next() (*Request, error) {
	if g.h.Len() == 0 && len(g.waiting) == 0 || (g.max > 0 && g.nextID >= g.max) {
		return nil, io.EOF
	}
	var s *genSession
	start := len(g.waiting) > 0 && (g.h.Len() == 0 || lessSession(&g.waiting[0], g.h.Min()))
	if start {
		s, g.waiting[0] = g.waiting[0], nil
		g.waiting = g.waiting[1:]
	} else {
		s = *g.h.Min()
	}
	r := s.pending
	if r == nil {
		r = g.build(s, s.first) // the session starts
	}
	r.ID = g.nextID
	g.nextID++
	s.turn++
	switch {
	case s.turn < s.turns && start:
		s.pending = g.make(s)
		g.h.Push(s)
	case s.turn < s.turns:
		s.pending = g.make(s)
		g.h.Fix(0)
	case !start:
		g.h.Pop()
	}
	return r, nil
}

// LengthsOnly makes the requests the generator builds from now on carry
// no Blocks (nil), for a pass that reads only the requests' lengths and
// times, such as pdemu run's preflight once it no longer keeps what it
// reads: that pass of the 1M-request run hashed ~1.2 billion blocks into
// ~630 MB of arrays it dropped at once. Every other field, and the order
// of the requests, stays what it would have been; requests already built
// (a started session's pending turn) keep their blocks.
func (g *Agentic) LengthsOnly() { g.noBlocks = true }

// make draws s's next turn and builds its Request.
func (g *Agentic) make(s *genSession) *Request {
	r := g.build(s, g.draw(s))
	s.at = r.Arrival
	return r
}

// turnDraw is what a turn takes from the generator's random stream.
type turnDraw struct {
	in, app, out int
	think        time.Duration
}

// draw makes s's next turn's random draws (and moves its arrival on).
func (g *Agentic) draw(s *genSession) turnDraw {
	c := g.cfg
	var d turnDraw
	if s.turn == 0 {
		d.in = c.SystemTokens + max(1, g.logNormal(float64(c.FirstTokens)))
		d.app = d.in
	} else {
		d.app = max(1, g.logNormal(float64(c.AppendTokens)))
		if g.rng.Float64() < 0.02 {
			d.app = 4096 + g.rng.IntN(12288) // a large tool output: half exceed τ_append=8192
		}
		d.in = s.prevIn + s.prevOut + d.app
		d.think = g.expDur(c.ThinkTime)
		s.arrival += d.think + time.Duration(s.prevOut)*20*time.Millisecond
	}
	d.out = max(1, g.logNormal(float64(c.OutputTokens)))
	return d
}

// build makes s's next turn's Request from its draws d.
func (g *Agentic) build(s *genSession, d turnDraw) *Request {
	c := g.cfg
	in, app, out, think := d.in, d.app, d.out, d.think
	if s.name == "" {
		s.name = fmt.Sprintf("s%03d", s.idx)
	}
	r := fromSlab(&g.reqs)
	*r = Request{
		Session:     s.idx,
		SessionName: s.name,
		Turn:        s.turn,
		Arrival:     s.arrival,
		Think:       think,
		InputLen:    in,
		OutputLen:   out,
		BlockTokens: c.BlockTokens,
		AppendLen:   app,
		Last:        s.turn == s.turns-1,
	}
	s.prevIn, s.prevOut = in, out
	if g.noBlocks {
		s.blocks = nil
		return r
	}
	// A session's prompt only grows, so every turn's Blocks is a prefix of
	// the next one's: they share one append-only backing array (appending
	// never rewrites an element an earlier request can see).
	nb := in / c.BlockTokens
	shared := c.SystemTokens / c.BlockTokens
	// A session's array is sized once for its expected last prompt (a
	// quarter more), so it is seldom regrown, which is what allocates
	// here. A turn appends its predecessor's output and a log-normal
	// append, or 2 % of the time a large one (mean 10,240 tokens, hence
	// +205). Its first turn is built when the session starts (Next), so
	// sessions not started hold no array (41,667 sessions pre-sized for
	// their last turn held ~400 MB in a 1M-request run when every first
	// turn was built up front; sizing the first array exactly and again
	// at the second turn then cost a second allocation and a copy per
	// session). Earlier requests keep a regrown session's old array (it
	// is never written again).
	want := (c.SystemTokens + c.FirstTokens + (s.turns-1)*(c.AppendTokens+205+c.OutputTokens)) / c.BlockTokens
	switch {
	case s.blocks == nil && s.turns == 1:
		s.blocks = make([]uint64, 0, nb)
	case s.blocks == nil, s.turn == 1 && cap(s.blocks) < nb+1:
		s.blocks = append(make([]uint64, 0, max(nb, min(want+want/4, blocksHint))), s.blocks...)
	}
	for i := len(s.blocks); i < nb; i++ {
		if i < shared {
			s.blocks = append(s.blocks, splitmix.Mix64(g.seed^uint64(i+1)*0x94d049bb133111eb))
		} else {
			s.blocks = append(s.blocks, splitmix.Mix64(s.salt^uint64(i+1)*0x94d049bb133111eb))
		}
	}
	r.Blocks = s.blocks[:nb:nb]
	if r.Last {
		s.blocks = nil
	}
	return r
}

// logNormal draws a log-normal value with the given mean and σ=0.8.
func (g *Agentic) logNormal(mean float64) int {
	const sigma = 0.8
	mu := math.Log(mean) - sigma*sigma/2
	return int(math.Round(math.Exp(mu + sigma*g.rng.NormFloat64())))
}

func (g *Agentic) expDur(mean time.Duration) time.Duration {
	return time.Duration(g.rng.ExpFloat64() * float64(mean))
}

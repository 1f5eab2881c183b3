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
	cfg    AgenticConfig
	seed   uint64
	rng    *rand.Rand
	h      minheap.Heap[*genSession]
	nextID int64
	max    int64
	reqs   []Request // make's slab
}

// reqSlab is how many Requests make allocates at once: one allocation per
// request was the generator's largest share of a replay's. Requests are
// immutable once emitted and only handled by pointer, so sharing an array
// changes nothing but when the memory is freed (with its last Request).
const reqSlab = 64

// blocksHint bounds the blocks pre-sized for a session's prompt.
const blocksHint = 1 << 14

type genSession struct {
	turnState
	idx     int32
	prevIn  int
	prevOut int
	arrival time.Duration
	salt    uint64
	blocks  []uint64 // the session's prompt blocks so far (shared backing array)
	name    string   // SessionName, formatted once per session
}

// lessSession orders sessions by their pending request's arrival, then
// index (a total order).
func lessSession(a, b **genSession) bool {
	x, y := (*a).pending, (*b).pending
	if x.Arrival != y.Arrival {
		return x.Arrival < y.Arrival
	}
	return (*a).idx < (*b).idx
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
		s := &genSession{turnState: turnState{turns: cfg.Turns}, idx: int32(i), arrival: start, salt: splitmix.Mix64(seed ^ uint64(i+1)*0xbf58476d1ce4e5b9)}
		s.pending = g.make(s)
		sessions = append(sessions, s)
	}
	g.h.Less = lessSession
	g.h.Init(sessions)
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
	if g.h.Len() == 0 || (g.max > 0 && g.nextID >= g.max) {
		return nil, io.EOF
	}
	r := nextTurn(&g.h, g.nextID, g.make)
	g.nextID++
	return r, nil
}

func (g *Agentic) make(s *genSession) *Request {
	c := g.cfg
	var in, app int
	var think time.Duration
	if s.turn == 0 {
		in = c.SystemTokens + max(1, g.logNormal(float64(c.FirstTokens)))
		app = in
	} else {
		app = max(1, g.logNormal(float64(c.AppendTokens)))
		if g.rng.Float64() < 0.02 {
			app = 4096 + g.rng.IntN(12288) // a large tool output: half exceed τ_append=8192
		}
		in = s.prevIn + s.prevOut + app
		think = g.expDur(c.ThinkTime)
		s.arrival += think + time.Duration(s.prevOut)*20*time.Millisecond
	}
	out := max(1, g.logNormal(float64(c.OutputTokens)))
	if s.name == "" {
		s.name = fmt.Sprintf("s%03d", s.idx)
	}
	if len(g.reqs) == 0 {
		g.reqs = make([]Request, reqSlab)
	}
	r := &g.reqs[0]
	g.reqs = g.reqs[1:]
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
	// A session's prompt only grows, so every turn's Blocks is a prefix of
	// the next one's: they share one append-only backing array (appending
	// never rewrites an element an earlier request can see).
	nb := in / c.BlockTokens
	shared := c.SystemTokens / c.BlockTokens
	switch {
	case s.blocks == nil:
		// A session's first turn is made before the session starts (all
		// of them when the generator is created): size it exactly, so
		// sessions that have not started hold no more than their first
		// prompt (41,667 sessions pre-sized for their last turn held
		// ~400 MB in a 1M-request run).
		s.blocks = make([]uint64, 0, nb)
	case s.turn == 1 && cap(s.blocks) < nb+1:
		// The session has started: size its array once for its expected
		// last prompt (a quarter more), so it is seldom regrown, which is
		// what allocates here. A turn appends its predecessor's output and
		// a log-normal append, or 2 % of the time a large one (mean 10,240
		// tokens, hence +205). Earlier requests keep the old array (it is
		// never written again).
		want := (c.SystemTokens + c.FirstTokens + (s.turns-1)*(c.AppendTokens+205+c.OutputTokens)) / c.BlockTokens
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
	s.prevIn, s.prevOut = in, out
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

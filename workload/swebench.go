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

// SWEBenchConfig configures NewSWEBench, a synthetic stand-in for the
// SWE-Bench agent trace of the KVC-Router paper (52 sessions, 4,449
// requests, 5.44 h, p50 gap between turns 2.53 s, 24-token blocks). Zero
// fields take the defaults in brackets. The published figures are the
// first four knobs; the rest are assumptions about a SWE-agent-like loop
// (documented per field) chosen so that appends are a few hundred tokens
// with a tail beyond τ_append = 8192, and prompts stay within a decode
// worker's pool (K_d = 92,104 tokens).
type SWEBenchConfig struct {
	Sessions int           // sessions [52]
	Requests int           // total requests, split over sessions [4449]
	Duration time.Duration // open-loop trace time target [5.44 h]: session starts are spread so the last one ends near it
	GapP50   time.Duration // median open-loop gap between consecutive turns of a session [2.53 s]
	// GapSigma is the log-normal σ of that gap [1.05], FITTED: with the
	// median it gives a mean gap of 4.4 s, so that 52 sessions of 85.6
	// turns back to back last 5.44 h (the trace looks collected one session
	// at a time).
	GapSigma float64
	// ActiveSessions > 0 replaces the Duration spread by staggered starts:
	// sessions 0..C−1 start at 0 and each later one when the earliest
	// running session ends (in the open-loop timeline), so C sessions are
	// active at once and the trace plays in a fraction of 5.44 h. This is
	// NOT the paper's replay (which keeps the real timeline and caps the
	// client at 32 outstanding requests: see WithClientCap); it is the
	// former "Concurrency" semantics under a name that says what it does.
	ActiveSessions int
	// Concurrency is the deprecated name of ActiveSessions (used when
	// ActiveSessions is 0).
	Concurrency int
	// Content names the content model whose values fill the zero fields
	// below (see SWEBenchContents): "paper" (default), "v0" (the model
	// before issue 10) or "v1-stress" (paper plus many 2–8K appends).
	Content    string
	TurnsSigma float64 // log-normal σ of turns per session around Requests/Sessions [0.5]
	MinTurns   int     // minimum turns per session [5]

	SystemTokens int     // system prompt + tool documentation, identical across sessions [3000]
	IssueTokens  int     // median issue statement + repository context of turn 0 (log-normal σ IssueSigma) [800]
	IssueSigma   float64 // log-normal σ of the turn-0 issue tokens [0.6]
	// Appends (tool observations) are log-normal around AppendP50 [paper
	// 187] with σ AppendSigma [1.0]; with probability MidAppendProb [paper
	// 0.02] an observation is a file listing or test log of uniform size in
	// [MidAppendMin, MidAppendMax] [2049, 8192], and with probability
	// LargeAppendProb [0.02] a file dump of uniform size in
	// [LargeAppendMin, LargeAppendMax] [8193, 24576]. Sources in
	// SWEBenchContents.
	AppendP50       int
	AppendSigma     float64
	MidAppendProb   float64
	MidAppendMin    int
	MidAppendMax    int
	LargeAppendProb float64
	LargeAppendMin  int
	LargeAppendMax  int
	// Outputs (thought + action) are log-normal around OutputP50 [paper
	// 176] with σ OutputSigma [0.7], capped at MaxOutput [4096].
	OutputP50   int
	OutputSigma float64
	MaxOutput   int
	// MaxContext [65536]: when a prompt would exceed it, the agent condenses
	// its history: the next prompt is the turn-0 prompt + CondensedTokens
	// [2000] of summary + the append (so only the turn-0 prefix is reused).
	MaxContext      int
	CondensedTokens int
	BlockTokens     int // block size of the hashes [24]
	// Think = gap − (ServiceBase [150 ms] + TokenTime [10 ms] × previous
	// output tokens), floored at 0: the nominal service time of the
	// predecessor is taken out of the recorded gap for closed-loop replay.
	ServiceBase time.Duration
	TokenTime   time.Duration
	// Exact: every field was set by the caller (usually from
	// SWEBenchDefaults plus overrides), so a zero is a value, not "the
	// default" (a probability or σ of 0, a zero system prompt).
	Exact bool
}

// SWEBench content models (SWEBenchConfig.Content).
const (
	// SWEBenchPaper is the default content model. Its sources:
	//   - outputs: median 176 FITTED to the paper's ≈ 1.00 M decode tokens
	//     over 4,449 requests given σ 0.7 (assumed; mean 225 tokens); the
	//     decode-token figure is therefore not a reproduction.
	//   - appends: median 187 FITTED to the paper's median uncached tokens
	//     per KVC request (187; with the session resident on its D the
	//     uncached part of a Direct request is its append); σ 1.0 assumed.
	//   - every other constant is published (sessions, requests, duration,
	//     gap median, blocks) or assumed: docs/MODEL.md §7.2's table
	//     (experiment.Params) labels each.
	//   - large-append tail: 2 % uniform in (8192, 24576] — an assumption
	//     (file dumps, long test logs of a SWE-agent loop), kept from the
	//     v0 model; nothing published pins it.
	//   - mid tail: 2 % uniform in (2048, 8192] — an assumption (whole-file
	//     views, pytest output), so that appends between v1's and v2's
	//     τ_append exist at all (v0 had 32 of them).
	SWEBenchPaper = "paper"
	// SWEBenchV0 is the content model before issue 10 (outputs median 90,
	// appends median 160, no mid tail), kept for comparison.
	SWEBenchV0 = "v0"
	// SWEBenchV1Stress is the paper model with 15 % of appends in
	// (2048, 8192]: many appends that v1's τ_append = 2048 rejects and
	// v2's 8192 serves Direct (an assumption-driven stress variant).
	SWEBenchV1Stress = "v1-stress"
)

// SWEBenchContents lists the content model names.
func SWEBenchContents() []string { return []string{SWEBenchPaper, SWEBenchV0, SWEBenchV1Stress} }

// SWEBenchDefaults fills zero fields of c with the defaults of its content
// model (c.Content, default SWEBenchPaper). An unknown content name is left
// for validation to report.
func SWEBenchDefaults(c SWEBenchConfig) SWEBenchConfig {
	orDefault(&c.Content, SWEBenchPaper)
	orDefault(&c.ActiveSessions, c.Concurrency)
	c.Concurrency = c.ActiveSessions
	if c.Exact {
		return c
	}
	switch c.Content {
	case SWEBenchV0:
		orDefault(&c.AppendP50, 160)
		orDefault(&c.OutputP50, 90)
		orDefault(&c.MidAppendMin, 2049) // MidAppendProb stays 0
	case SWEBenchPaper, SWEBenchV1Stress:
		orDefault(&c.AppendP50, 187)
		orDefault(&c.OutputP50, 176)
		if c.MidAppendProb == 0 {
			c.MidAppendProb = 0.02
			if c.Content == SWEBenchV1Stress {
				c.MidAppendProb = 0.15
			}
		}
	}
	orDefault(&c.Sessions, 52)
	orDefault(&c.Requests, 4449)
	orDefault(&c.Duration, time.Duration(5.44*float64(time.Hour)))
	orDefault(&c.GapP50, 2530*time.Millisecond)
	orDefault(&c.GapSigma, 1.05)
	orDefault(&c.TurnsSigma, 0.5)
	orDefault(&c.MinTurns, 5)
	orDefault(&c.SystemTokens, 3000)
	orDefault(&c.IssueTokens, 800)
	orDefault(&c.IssueSigma, 0.6)
	orDefault(&c.AppendSigma, 1.0)
	orDefault(&c.MidAppendMin, 2049)
	orDefault(&c.MidAppendMax, 8192)
	orDefault(&c.LargeAppendProb, 0.02)
	orDefault(&c.LargeAppendMin, 8193)
	orDefault(&c.LargeAppendMax, 24576)
	orDefault(&c.OutputSigma, 0.7)
	orDefault(&c.MaxOutput, 4096)
	orDefault(&c.MaxContext, 65536)
	orDefault(&c.CondensedTokens, 2000)
	orDefault(&c.BlockTokens, 24)
	orDefault(&c.ServiceBase, 150*time.Millisecond)
	orDefault(&c.TokenTime, 10*time.Millisecond)
	return c
}

func (c SWEBenchConfig) validate() error {
	switch {
	case c.Content != SWEBenchPaper && c.Content != SWEBenchV0 && c.Content != SWEBenchV1Stress:
		return fmt.Errorf("workload: swebench content %q unknown (known: %v)", c.Content, SWEBenchContents())
	case c.MidAppendProb < 0 || c.MidAppendProb+c.LargeAppendProb > 1 || c.MidAppendMin < 1 || c.MidAppendMax < c.MidAppendMin:
		return fmt.Errorf("workload: swebench mid appends need probability in [0, 1 − large] and 1 <= min <= max (got %g, %d, %d)", c.MidAppendProb, c.MidAppendMin, c.MidAppendMax)
	case c.Sessions < 1 || c.Requests < c.Sessions:
		return fmt.Errorf("workload: swebench needs 1 <= sessions <= requests (got %d sessions, %d requests)", c.Sessions, c.Requests)
	case c.BlockTokens < 1 || c.OutputP50 < 1 || c.MaxOutput < 1 || c.AppendP50 < 1 || c.IssueTokens < 1:
		return fmt.Errorf("workload: swebench block_tokens, output, append and issue sizes must be >= 1")
	case c.SystemTokens < 0 || c.MinTurns < 1 || c.Concurrency < 0 || c.CondensedTokens < 0:
		return fmt.Errorf("workload: swebench system tokens, condensed tokens and concurrency must be >= 0 and min turns >= 1")
	case c.Duration < 0 || c.GapP50 <= 0 || c.ServiceBase < 0 || c.TokenTime < 0:
		return fmt.Errorf("workload: swebench durations must be >= 0 (gap p50 > 0)")
	case c.GapSigma < 0 || c.TurnsSigma < 0 || c.AppendSigma < 0 || c.OutputSigma < 0 || c.IssueSigma < 0 || c.LargeAppendProb < 0 || c.LargeAppendProb > 1:
		return fmt.Errorf("workload: swebench σ must be >= 0 and the large-append probability in [0, 1]")
	case c.LargeAppendMin < 1 || c.LargeAppendMax < c.LargeAppendMin:
		return fmt.Errorf("workload: swebench large appends need 1 <= min <= max (got %d, %d)", c.LargeAppendMin, c.LargeAppendMax)
	case c.MaxContext < c.SystemTokens+c.CondensedTokens+c.BlockTokens+2:
		return fmt.Errorf("workload: swebench max context %d too small for the system prompt (%d) and summary (%d)", c.MaxContext, c.SystemTokens, c.CondensedTokens)
	}
	return nil
}

// SWEBench streams the SWE-Bench-like workload of SWEBenchConfig: each
// session is an agent that re-sends its whole history every turn (system
// prompt, issue, then thought/action/observation triples), so prompts grow
// by output + observation per turn and share their prefix with the
// previous turn. Requests come out in arrival order; sessions are created
// when they start and dropped when done, and each draws from its own
// random stream, so memory is O(active sessions) and a session's content
// does not depend on the others.
type SWEBench struct {
	cfg      SWEBenchConfig
	seed     uint64
	turns    []int32
	sys      []uint64 // shared hashes of the system prompt's full blocks
	h        minheap.Heap[*swSession]
	nextSess int
	nextAt   time.Duration
	step     time.Duration
	plan     startPlan
	startRng *rand.Rand
	nextID   int64
}

type swSession struct {
	idx     int32
	name    string
	turn    int
	turns   int
	arrival time.Duration
	rng     *rand.Rand
	gaps    *rand.Rand
	salt    uint64
	epoch   uint64
	blocks  []uint64 // full blocks of the token stream so far
	length  int      // tokens in the stream (prompt + output so far)
	baseIn  int      // turn-0 prompt length
	prevIn  int
	prevOut int
	pending *Request
}

// lessSWSession orders sessions by their pending request's arrival, then
// index (a total order).
func lessSWSession(a, b **swSession) bool {
	x, y := (*a).pending, (*b).pending
	if x.Arrival != y.Arrival {
		return x.Arrival < y.Arrival
	}
	return (*a).idx < (*b).idx
}

// NewSWEBench returns the seeded SWE-Bench-like generator (see
// SWEBenchConfig for the model and its defaults).
func NewSWEBench(cfg SWEBenchConfig, seed uint64) (*SWEBench, error) {
	cfg = SWEBenchDefaults(cfg)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := &SWEBench{cfg: cfg, seed: seed}
	g.h.Less = lessSWSession
	rng := rand.New(rand.NewPCG(seed, 0x53_57_45_42)) // "SWEB"
	g.startRng = rand.New(rand.NewPCG(seed, 0x57a27))
	g.turns = splitTurns(rng, cfg.Sessions, cfg.Requests, cfg.MinTurns, cfg.TurnsSigma)
	sysKey := splitmix.Mix64(seed ^ 0x5e5)
	var h uint64
	g.sys = make([]uint64, cfg.SystemTokens/cfg.BlockTokens)
	for i := range g.sys {
		h = chain(h, sysKey+uint64(i))
		g.sys[i] = h
	}
	if cfg.Concurrency > 0 {
		g.plan = startPlan{conc: cfg.Concurrency}
	} else {
		meanGap := float64(cfg.GapP50) * math.Exp(cfg.GapSigma*cfg.GapSigma/2)
		span := float64(cfg.Requests)/float64(cfg.Sessions) - 1
		g.step = time.Duration(max(0, (float64(cfg.Duration)-span*meanGap)/float64(cfg.Sessions)))
	}
	g.nextAt = g.startOf(0)
	return g, nil
}

// splitTurns draws log-normal session weights and splits total requests
// over n sessions (each >= minTurns where possible) by largest remainder.
func splitTurns(rng *rand.Rand, n, total, minTurns int, sigma float64) []int32 {
	minTurns = min(minTurns, total/n)
	w := make([]float64, n)
	var sum float64
	for i := range w {
		w[i] = math.Exp(sigma * rng.NormFloat64())
		sum += w[i]
	}
	spare := total - n*minTurns
	out := make([]int32, n)
	type rem struct {
		i int
		f float64
	}
	rems := make([]rem, n)
	given := 0
	for i := range w {
		x := float64(spare) * w[i] / sum
		fl := math.Floor(x)
		out[i] = int32(minTurns) + int32(fl)
		given += int(fl)
		rems[i] = rem{i, x - fl}
	}
	// Hand out the remainder to the largest fractions (stable by index).
	for left := spare - given; left > 0; left-- {
		best := -1
		for j := range rems {
			if rems[j].f >= 0 && (best < 0 || rems[j].f > rems[best].f) {
				best = j
			}
		}
		out[rems[best].i]++
		rems[best].f = -1
	}
	return out
}

// startOf returns the start of session k (called in order).
func (g *SWEBench) startOf(k int) time.Duration {
	if g.cfg.Concurrency > 0 {
		return g.plan.next()
	}
	if k == 0 {
		return 0
	}
	return time.Duration(k)*g.step + time.Duration(g.startRng.Float64()*float64(g.step))
}

// Next implements Source.
func (g *SWEBench) Next() (*Request, error) {
	for g.nextSess < g.cfg.Sessions && (g.h.Len() == 0 || g.nextAt <= (*g.h.Min()).pending.Arrival) {
		g.startSession()
	}
	if g.h.Len() == 0 {
		return nil, io.EOF
	}
	s := *g.h.Min()
	r := s.pending
	r.ID = g.nextID
	g.nextID++
	s.turn++
	if s.turn >= s.turns {
		g.h.Pop()
	} else {
		s.pending = g.make(s)
		g.h.Fix(0)
	}
	return r, nil
}

func (g *SWEBench) startSession() {
	k := g.nextSess
	g.nextSess++
	s := &swSession{
		idx: int32(k), name: fmt.Sprintf("swe%03d", k), turns: int(g.turns[k]),
		arrival: g.nextAt,
		rng:     rand.New(rand.NewPCG(g.seed^uint64(k+1)*0x9e3779b97f4a7c15, 0x5e55)),
		salt:    splitmix.Mix64(g.seed ^ uint64(k+1)*0xbf58476d1ce4e5b9),
	}
	gapSeed := g.seed ^ uint64(k+1)*0xd1b54a32d192ed03
	if g.cfg.Concurrency > 0 {
		// The open-loop span of the session is needed now for the slots:
		// draw its gaps once from a copy of the stream it will use.
		pre := rand.New(rand.NewPCG(gapSeed, 0x6a75))
		var span time.Duration
		for t := 1; t < s.turns; t++ {
			span += g.gap(pre)
		}
		g.plan.opened(s.arrival, span)
	}
	s.gaps = rand.New(rand.NewPCG(gapSeed, 0x6a75))
	s.pending = g.make(s)
	g.h.Push(s)
	if g.nextSess < g.cfg.Sessions {
		g.nextAt = max(g.nextAt, g.startOf(g.nextSess))
	}
}

// gap draws an open-loop gap between turns (capped at 30 days).
func (g *SWEBench) gap(rng *rand.Rand) time.Duration {
	x := float64(g.cfg.GapP50) * math.Exp(g.cfg.GapSigma*rng.NormFloat64())
	return time.Duration(min(x, float64(30*24*time.Hour)))
}

// logNormalInt draws a log-normal integer (capped at maxTokens).
func logNormalInt(rng *rand.Rand, median int, sigma float64) int {
	return int(min(math.Round(float64(median)*math.Exp(sigma*rng.NormFloat64())), maxTokens))
}

// extend appends n tokens to the session's token stream, hashing new full blocks.
func (g *SWEBench) extend(s *swSession, n int) {
	bt := g.cfg.BlockTokens
	s.length += n
	h := uint64(0)
	if len(s.blocks) > 0 {
		h = s.blocks[len(s.blocks)-1]
	}
	for i := len(s.blocks); i < s.length/bt; i++ {
		if i < len(g.sys) {
			h = g.sys[i]
		} else {
			h = chain(h, s.salt^s.epoch<<48^uint64(i))
		}
		s.blocks = append(s.blocks, h)
	}
}

func (g *SWEBench) make(s *swSession) *Request {
	c := g.cfg
	var in, app int
	var think time.Duration
	if s.turn == 0 {
		issue := max(1, logNormalInt(s.rng, c.IssueTokens, c.IssueSigma))
		issue = min(issue, c.MaxContext-c.SystemTokens-c.CondensedTokens-1)
		g.extend(s, c.SystemTokens+issue)
		in = s.length
		app = in
		s.baseIn = in
	} else {
		if u := s.rng.Float64(); u < c.LargeAppendProb {
			app = c.LargeAppendMin + s.rng.IntN(c.LargeAppendMax-c.LargeAppendMin+1)
		} else if u < c.LargeAppendProb+c.MidAppendProb {
			app = c.MidAppendMin + s.rng.IntN(c.MidAppendMax-c.MidAppendMin+1)
		} else {
			app = max(1, logNormalInt(s.rng, c.AppendP50, c.AppendSigma))
		}
		gap := g.gap(s.gaps)
		s.arrival = satAdd(s.arrival, gap)
		think = max(0, gap-c.ServiceBase-time.Duration(s.prevOut)*c.TokenTime)
		g.extend(s, s.prevOut)
		if s.length+app > c.MaxContext {
			// Condense: keep the turn-0 prompt, add a summary, then the append.
			app = min(app, c.MaxContext-s.baseIn-c.CondensedTokens)
			s.blocks = s.blocks[:s.baseIn/c.BlockTokens]
			s.length = s.baseIn
			s.epoch++
			g.extend(s, c.CondensedTokens+app)
			in = s.length
			app = in - s.baseIn
		} else {
			g.extend(s, app)
			in = s.length
		}
	}
	out := min(c.MaxOutput, max(1, logNormalInt(s.rng, c.OutputP50, c.OutputSigma)))
	r := &Request{
		Session: s.idx, SessionName: s.name, Turn: s.turn,
		Arrival: s.arrival, Think: think,
		InputLen: in, OutputLen: out, AppendLen: app,
		Blocks: append([]uint64(nil), s.blocks...), BlockTokens: c.BlockTokens,
		Last: s.turn+1 >= s.turns,
	}
	s.prevIn, s.prevOut = in, out
	if s.turn+1 >= s.turns {
		s.blocks = nil // last turn: release the context
	}
	return r
}

package topology

import (
	"time"

	"github.com/hashicorp/hcl/v2"
)

// Every constant of the SWE-Bench generator's content model (issue 19) is an
// attribute of generator "swebench": the time model, the turn counts, the
// prompt, append and output distributions, history condensation and the
// nominal service time taken out of recorded gaps. An unset attribute keeps
// the content model's default (workload.SWEBenchDefaults; docs/MODEL.md §7.2
// lists each with its label: published, fitted or assumed). A parameter
// set on another generator is an error.

// SWEBenchParams are the generator "swebench" attributes the scenario set
// (nil: the content model's default). cluster.Source lays them over
// workload.SWEBenchDefaults.
type SWEBenchParams struct {
	Duration        *time.Duration // duration: open-loop trace time target: session starts are spread so the last one ends near it
	GapP50          *time.Duration // gap_p50: median open-loop gap between consecutive turns of a session
	GapSigma        *float64       // gap_sigma: log-normal σ of the gap between turns
	TurnsSigma      *float64       // turns_sigma: log-normal σ of turns per session around requests/sessions
	MinTurns        *int           // min_turns: minimum turns per session
	SystemTokens    *int           // system_tokens: system prompt + tool documentation, shared by every session
	IssueTokens     *int           // issue_tokens: median issue statement + repository context of turn 0
	IssueSigma      *float64       // issue_sigma: log-normal σ of the turn-0 issue tokens
	AppendP50       *int           // append_p50: median tool observation appended per turn (log-normal body)
	AppendSigma     *float64       // append_sigma: log-normal σ of the appended observation
	MidAppendProb   *float64       // mid_append_prob: probability that an observation is a mid-size one (uniform in [mid_append_min, mid_append_max])
	MidAppendMin    *int           // mid_append_min: smallest mid-size observation (tokens)
	MidAppendMax    *int           // mid_append_max: largest mid-size observation (tokens)
	LargeAppendProb *float64       // large_append_prob: probability that an observation is a file dump (uniform in [large_append_min, large_append_max])
	LargeAppendMin  *int           // large_append_min: smallest file-dump observation (tokens)
	LargeAppendMax  *int           // large_append_max: largest file-dump observation (tokens)
	OutputP50       *int           // output_p50: median output tokens per turn (log-normal)
	OutputSigma     *float64       // output_sigma: log-normal σ of the output tokens
	MaxOutput       *int           // max_output: cap on output tokens per turn
	MaxContext      *int           // max_context: prompt length at which the agent condenses its history
	CondensedTokens *int           // condensed_tokens: summary tokens a condensed prompt keeps after the turn-0 prompt
	ServiceBase     *time.Duration // service_base: nominal service time taken out of each recorded gap, fixed part
	TokenTime       *time.Duration // token_time: nominal service time per output token of the previous turn, taken out of the gap
}

// setParams lists which SWEBenchParams attributes gh sets (system_tokens,
// which the agentic generator takes too, aside).
func (gh *generatorHCL) setParams() []struct {
	set  bool
	rng  hcl.Range
	name string
} {
	return []struct {
		set  bool
		rng  hcl.Range
		name string
	}{
		{gh.DurationAttr != nil, gh.DurationRange, "duration"},
		{gh.GapP50Attr != nil, gh.GapP50Range, "gap_p50"},
		{gh.GapSigmaAttr != nil, gh.GapSigmaRange, "gap_sigma"},
		{gh.TurnsSigmaAttr != nil, gh.TurnsSigmaRange, "turns_sigma"},
		{gh.MinTurnsAttr != nil, gh.MinTurnsRange, "min_turns"},
		{gh.IssueTokensAttr != nil, gh.IssueTokensRange, "issue_tokens"},
		{gh.IssueSigmaAttr != nil, gh.IssueSigmaRange, "issue_sigma"},
		{gh.AppendP50Attr != nil, gh.AppendP50Range, "append_p50"},
		{gh.AppendSigmaAttr != nil, gh.AppendSigmaRange, "append_sigma"},
		{gh.MidAppendProbAttr != nil, gh.MidAppendProbRange, "mid_append_prob"},
		{gh.MidAppendMinAttr != nil, gh.MidAppendMinRange, "mid_append_min"},
		{gh.MidAppendMaxAttr != nil, gh.MidAppendMaxRange, "mid_append_max"},
		{gh.LargeAppendProbAttr != nil, gh.LargeAppendProbRange, "large_append_prob"},
		{gh.LargeAppendMinAttr != nil, gh.LargeAppendMinRange, "large_append_min"},
		{gh.LargeAppendMaxAttr != nil, gh.LargeAppendMaxRange, "large_append_max"},
		{gh.OutputP50Attr != nil, gh.OutputP50Range, "output_p50"},
		{gh.OutputSigmaAttr != nil, gh.OutputSigmaRange, "output_sigma"},
		{gh.MaxOutputAttr != nil, gh.MaxOutputRange, "max_output"},
		{gh.MaxContextAttr != nil, gh.MaxContextRange, "max_context"},
		{gh.CondensedTokensAttr != nil, gh.CondensedTokensRange, "condensed_tokens"},
		{gh.ServiceBaseAttr != nil, gh.ServiceBaseRange, "service_base"},
		{gh.TokenTimeAttr != nil, gh.TokenTimeRange, "token_time"},
	}
}

// swebenchParams decodes and checks the SWEBenchParams of a swebench
// generator block. Cross-attribute rules (min ≤ max, probabilities that sum
// to at most 1) are checked against the values in force, the defaults
// included.
func (c *checker) swebenchParams(gh *generatorHCL, content string) SWEBenchParams {
	var p SWEBenchParams
	if gh.DurationAttr != nil {
		if v, ok := c.checkDurationOK(gh.DurationAttr, gh.DurationRange, 0, 0, "duration", "open-loop trace time target: session starts are spread so the last one ends near it"); ok {
			p.Duration = &v
		}
	}
	if gh.GapP50Attr != nil {
		if v, ok := c.checkDurationOK(gh.GapP50Attr, gh.GapP50Range, 0, time.Nanosecond, "gap_p50", "median open-loop gap between consecutive turns of a session"); ok {
			p.GapP50 = &v
		}
	}
	p.GapSigma = optNum(c, gh.GapSigmaAttr, gh.GapSigmaRange, "gap_sigma", "log-normal σ of the gap between turns", between(0.0, 4.0))
	p.TurnsSigma = optNum(c, gh.TurnsSigmaAttr, gh.TurnsSigmaRange, "turns_sigma", "log-normal σ of turns per session around requests/sessions", between(0.0, 4.0))
	p.MinTurns = optNum(c, gh.MinTurnsAttr, gh.MinTurnsRange, "min_turns", "minimum turns per session", between(1, MaxTurns))
	p.SystemTokens = optNum(c, gh.SystemTokens, gh.SystemTokensRange, "system_tokens", "system prompt + tool documentation, shared by every session", between(0, MaxRequestTokens))
	p.IssueTokens = optNum(c, gh.IssueTokensAttr, gh.IssueTokensRange, "issue_tokens", "median issue statement + repository context of turn 0", between(1, MaxRequestTokens))
	p.IssueSigma = optNum(c, gh.IssueSigmaAttr, gh.IssueSigmaRange, "issue_sigma", "log-normal σ of the turn-0 issue tokens", between(0.0, 4.0))
	p.AppendP50 = optNum(c, gh.AppendP50Attr, gh.AppendP50Range, "append_p50", "median tool observation appended per turn (log-normal body)", between(1, MaxRequestTokens))
	p.AppendSigma = optNum(c, gh.AppendSigmaAttr, gh.AppendSigmaRange, "append_sigma", "log-normal σ of the appended observation", between(0.0, 4.0))
	p.MidAppendProb = optNum(c, gh.MidAppendProbAttr, gh.MidAppendProbRange, "mid_append_prob", "probability that an observation is a mid-size one (uniform in [mid_append_min, mid_append_max])", unitIntervalClosed)
	p.MidAppendMin = optNum(c, gh.MidAppendMinAttr, gh.MidAppendMinRange, "mid_append_min", "smallest mid-size observation (tokens)", between(1, MaxRequestTokens))
	p.MidAppendMax = optNum(c, gh.MidAppendMaxAttr, gh.MidAppendMaxRange, "mid_append_max", "largest mid-size observation (tokens)", between(1, MaxRequestTokens))
	p.LargeAppendProb = optNum(c, gh.LargeAppendProbAttr, gh.LargeAppendProbRange, "large_append_prob", "probability that an observation is a file dump (uniform in [large_append_min, large_append_max])", unitIntervalClosed)
	p.LargeAppendMin = optNum(c, gh.LargeAppendMinAttr, gh.LargeAppendMinRange, "large_append_min", "smallest file-dump observation (tokens)", between(1, MaxRequestTokens))
	p.LargeAppendMax = optNum(c, gh.LargeAppendMaxAttr, gh.LargeAppendMaxRange, "large_append_max", "largest file-dump observation (tokens)", between(1, MaxRequestTokens))
	p.OutputP50 = optNum(c, gh.OutputP50Attr, gh.OutputP50Range, "output_p50", "median output tokens per turn (log-normal)", between(1, MaxRequestTokens))
	p.OutputSigma = optNum(c, gh.OutputSigmaAttr, gh.OutputSigmaRange, "output_sigma", "log-normal σ of the output tokens", between(0.0, 4.0))
	p.MaxOutput = optNum(c, gh.MaxOutputAttr, gh.MaxOutputRange, "max_output", "cap on output tokens per turn", between(1, MaxRequestTokens))
	p.MaxContext = optNum(c, gh.MaxContextAttr, gh.MaxContextRange, "max_context", "prompt length at which the agent condenses its history", between(1, MaxRequestTokens))
	p.CondensedTokens = optNum(c, gh.CondensedTokensAttr, gh.CondensedTokensRange, "condensed_tokens", "summary tokens a condensed prompt keeps after the turn-0 prompt", between(0, MaxRequestTokens))
	if gh.ServiceBaseAttr != nil {
		if v, ok := c.checkDurationOK(gh.ServiceBaseAttr, gh.ServiceBaseRange, 0, 0, "service_base", "nominal service time taken out of each recorded gap, fixed part"); ok {
			p.ServiceBase = &v
		}
	}
	if gh.TokenTimeAttr != nil {
		if v, ok := c.checkDurationOK(gh.TokenTimeAttr, gh.TokenTimeRange, 0, 0, "token_time", "nominal service time per output token of the previous turn, taken out of the gap"); ok {
			p.TokenTime = &v
		}
	}
	c.swebenchPairs(gh, &p, content)
	return p
}

// swebenchPairs checks the min/max pairs and the append probabilities.
func (c *checker) swebenchPairs(gh *generatorHCL, p *SWEBenchParams, content string) {
	val := func(v *int, def int) int {
		if v != nil {
			return *v
		}
		return def
	}
	valF := func(v *float64, def float64) float64 {
		if v != nil {
			return *v
		}
		return def
	}
	for _, pr := range []struct {
		lo, hi   *int
		dlo, dhi int
		rLo, rHi hcl.Range
		nLo, nHi string
	}{
		{p.MidAppendMin, p.MidAppendMax, SWEBenchMidAppendMin, SWEBenchMidAppendMax, gh.MidAppendMinRange, gh.MidAppendMaxRange, "mid_append_min", "mid_append_max"},
		{p.LargeAppendMin, p.LargeAppendMax, SWEBenchLargeAppendMin, SWEBenchLargeAppendMax, gh.LargeAppendMinRange, gh.LargeAppendMaxRange, "large_append_min", "large_append_max"},
	} {
		if pr.lo == nil && pr.hi == nil {
			continue
		}
		lo, hi := val(pr.lo, pr.dlo), val(pr.hi, pr.dhi)
		if lo > hi {
			rng := pr.rHi
			if pr.hi == nil {
				rng = pr.rLo
			}
			c.errorf(rng, "Invalid append range", "%s (%d) must be at most %s (%d), defaults included.", pr.nLo, lo, pr.nHi, hi)
		}
	}
	if p.MidAppendProb != nil || p.LargeAppendProb != nil {
		defMid := SWEBenchMidAppendProb
		switch content {
		case "v1-stress":
			defMid = SWEBenchV1StressMidAppendProb
		case "v0":
			defMid = 0
		}
		mid := valF(p.MidAppendProb, defMid)
		large := valF(p.LargeAppendProb, SWEBenchLargeAppendProb)
		if mid+large > 1 {
			rng := gh.MidAppendProbRange
			if p.MidAppendProb == nil {
				rng = gh.LargeAppendProbRange
			}
			c.errorf(rng, "Invalid append probabilities", "mid_append_prob (%g) + large_append_prob (%g) must be at most 1, defaults included.", mid, large)
		}
	}
	if p.SystemTokens != nil || p.CondensedTokens != nil || p.MaxContext != nil {
		sys, cond, maxc := val(p.SystemTokens, SWEBenchSystemTokens), val(p.CondensedTokens, SWEBenchCondensedTokens), val(p.MaxContext, SWEBenchMaxContext)
		if maxc < sys+cond+DefaultBlockTokens+2 {
			c.errorf(gh.MaxContextRange, "Invalid max_context", "max_context (%d) must leave room for system_tokens (%d), condensed_tokens (%d) and a block, defaults included.", maxc, sys, cond)
		}
	}
}

// Defaults of the paper content model that the cross-attribute checks need
// (workload.SWEBenchDefaults; a cluster test checks they agree).
const (
	SWEBenchMidAppendProb         = 0.02
	SWEBenchV1StressMidAppendProb = 0.15
	SWEBenchMidAppendMin          = 2049
	SWEBenchMidAppendMax          = 8192
	SWEBenchLargeAppendProb       = 0.02
	SWEBenchLargeAppendMin        = 8193
	SWEBenchLargeAppendMax        = 24576
	SWEBenchSystemTokens          = 3000
	SWEBenchCondensedTokens       = 2000
	SWEBenchMaxContext            = 65536
)

// optNum is checkNum for an optional attribute: nil when it is absent
// (the generator keeps its default), else the checked value (the written
// one, or its own value again after a diagnostic: the run stops anyway).
func optNum[T int | uint64 | float64](c *checker, p *T, rng hcl.Range, name, help string, check func(T) string) *T {
	if p == nil {
		return nil
	}
	v := checkNum(c, p, rng, *p, name, help, check)
	return &v
}

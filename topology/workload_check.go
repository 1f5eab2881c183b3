package topology

import (
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

func (c *checker) workload(filename string, wh *workloadHCL) Workload {
	w := DefaultWorkload()
	w.Clock = c.checkEnum(wh.Clock, wh.ClockRange, w.Clock, "clock", ClockVirtual, ClockWall)
	w.TimeScale = checkNum(c, wh.TimeScale, wh.TimeScaleRange, w.TimeScale, "time_scale",
		"wall clock: emulated d takes d/time_scale real time", inLeftOpen(0, MaxTimeScale))
	w.Seed = c.checkSeed(wh.Seed, wh.SeedRange, w.Seed, "")
	w.Loop = c.checkEnum(wh.Loop, wh.LoopRange, w.Loop, "loop", LoopOpen, LoopClosed)
	w.MaxRequests = checkNum(c, wh.MaxRequests, wh.MaxRequestsRange, w.MaxRequests, "max_requests",
		"0 replays every request", between(0, MaxRequests))
	w.SampleInterval = c.checkDuration(wh.SampleInterval, wh.SampleIntervalRange, w.SampleInterval,
		MinSampleInterval, "sample_interval", "instances.csv sampling interval")

	if wh.Trace != nil {
		switch {
		case *wh.Trace == "":
			c.errorf(wh.TraceRange, "Empty trace path", "\"trace\" must name a trace file or directory; remove it to use the generator.")
		default:
			base := c.opts.BaseDir
			if base == "" {
				base = filepath.Dir(filename)
			}
			if c.opts.EmbeddedBaseDir != "" && strings.HasPrefix(wh.TraceRange.Filename, EmbeddedPrefix) {
				base = c.opts.EmbeddedBaseDir
			}
			w.Trace = *wh.Trace
			if !filepath.IsAbs(w.Trace) {
				w.Trace = filepath.Join(base, w.Trace)
			}
		}
	}
	if wh.Format != nil {
		switch {
		case wh.Trace == nil && c.opts.Trace == "":
			c.errorf(wh.FormatRange, "Format without trace", "\"format\" names the format of the trace file; it only applies together with \"trace\".")
		case *wh.Format == "":
			// "" means detect.
		case c.opts.KnownFormat != nil && !c.opts.KnownFormat(*wh.Format):
			extra := didYouMean(*wh.Format, c.opts.FormatNames)
			if extra == "" && len(c.opts.FormatNames) > 0 {
				extra = " Known formats: " + quotedList(c.opts.FormatNames) + "."
			}
			c.errorf(wh.FormatRange, "Unknown trace format", "There is no trace format named %q.%s", *wh.Format, extra)
		default:
			w.Format = *wh.Format
		}
	}

	c.replay(wh, &w)
	if gh := firstOf(c, "generator", wh.Generators, func(b *generatorHCL) hcl.Range { return b.DefRange }, ""); gh != nil {
		c.generatorBlock(wh, gh, filename, &w)
	}
	if c.opts.Trace != "" {
		w.Trace, w.Format = c.opts.Trace, ""
	}
	w.ClientCap = checkNum(c, wh.ClientCap, wh.ClientCapRange, 0, "client_cap", "requests the replay client keeps outstanding; 0 = no cap", between(0, MaxRequests))
	return w
}

// generatorBlock checks the workload's generator block gh into
// w.Generator, unless a trace replaces it.
func (c *checker) generatorBlock(wh *workloadHCL, gh *generatorHCL, filename string, w *Workload) {
	if wh.Trace != nil {
		// A file that extends another replaces its workload source: a
		// trace set here (or by --set) drops the base's generator.
		if ownRange(filename, wh.TraceRange) && !ownRange(filename, gh.DefRange) {
			return
		}
		c.errorf(gh.DefRange, "Conflicting workload sources",
			"The workload has both a trace (%s) and a generator block; they are mutually exclusive. Remove one.", wh.TraceRange)
	}
	if c.opts.Trace != "" {
		return // replaced by the trace
	}
	c.generatorKind(gh) // topology/kvcpaper.go
	w.Generator = c.generator(gh)
	c.kvcGenerator(gh, &w.Generator) // topology/kvcpaper.go
}

// replay checks the trace replay options of a workload block.
func (c *checker) replay(wh *workloadHCL, w *Workload) {
	type opt struct {
		set  bool
		rng  hcl.Range
		name string
	}
	opts := []opt{
		{wh.SkipBad != nil, wh.SkipBadRange, "skip_bad"},
		{wh.SessionRate != nil, wh.SessionRateRange, "session_rate"},
		{wh.MaxConcurrent != nil, wh.MaxConcurrentRange, "max_concurrent"},
		{wh.SharePrefix != nil, wh.SharePrefixRange, "share_prefix"},
		{wh.InferSessions != nil, wh.InferSessionsRange, "infer_sessions"},
		{wh.TraceTime != nil, wh.TraceTimeRange, "trace_time"},
	}
	if wh.Trace == nil && c.opts.Trace == "" {
		for _, o := range opts {
			if o.set {
				c.errorf(o.rng, "Trace option without trace",
					"%q is a trace replay option; it only applies together with \"trace\".", o.name)
			}
		}
		return
	}
	r := &w.Replay
	if wh.SkipBad != nil {
		r.SkipBad = *wh.SkipBad
	}
	if wh.SharePrefix != nil {
		r.SharePrefix = *wh.SharePrefix
	}
	if wh.InferSessions != nil {
		r.InferSessions = *wh.InferSessions
	}
	if wh.TraceTime != nil {
		r.TraceTime = *wh.TraceTime
	}
	r.SessionRate = checkNum(c, wh.SessionRate, wh.SessionRateRange, 0, "session_rate",
		"Poisson session starts in sessions per second", inLeftOpen(0, MaxSessionRate))
	r.MaxConcurrent = checkNum(c, wh.MaxConcurrent, wh.MaxConcurrentRange, 0, "max_concurrent",
		"at most this many sessions overlap", between(1, MaxSessions))
	starts := 0
	var last hcl.Range
	for _, o := range []opt{opts[1], opts[2], {r.TraceTime, wh.TraceTimeRange, "trace_time"}} {
		if o.set {
			starts++
			last = o.rng
		}
	}
	if starts > 1 {
		c.errorf(last, "Conflicting session starts",
			"Set at most one of session_rate, max_concurrent and trace_time: each decides when sessions start.")
	}
}

func (c *checker) generator(gh *generatorHCL) Generator {
	g := DefaultGenerator()
	tokens := func(lo int) func(int) string { return between(lo, MaxRequestTokens) }
	g.Sessions = checkNum(c, gh.Sessions, gh.SessionsRange, g.Sessions, "sessions", "number of sessions", between(1, MaxSessions))
	g.Turns = checkNum(c, gh.Turns, gh.TurnsRange, g.Turns, "turns", "turns per session", between(1, MaxTurns))
	g.SystemTokens = checkNum(c, gh.SystemTokens, gh.SystemTokensRange, g.SystemTokens, "system_tokens", "shared system prefix; 0 = none", tokens(0))
	g.FirstTokens = checkNum(c, gh.FirstTokens, gh.FirstTokensRange, g.FirstTokens, "first_tokens", "first user message", tokens(1))
	g.AppendTokens = checkNum(c, gh.AppendTokens, gh.AppendTokensRange, g.AppendTokens, "append_tokens", "mean tokens appended per turn; every turn appends at least one", tokens(1))
	g.OutputTokens = checkNum(c, gh.OutputTokens, gh.OutputTokensRange, g.OutputTokens, "output_tokens", "mean output tokens per turn", tokens(1))
	g.ThinkTime = c.checkDuration(gh.ThinkTime, gh.ThinkTimeRange, g.ThinkTime, 0, "think_time", "mean think/tool time between turns")
	g.SessionStagger = c.checkDuration(gh.SessionStagger, gh.SessionStaggerRange, g.SessionStagger, 0, "session_stagger", "mean gap between session starts; 0 starts every session at once")
	g.BlockTokens = checkNum(c, gh.BlockTokens, gh.BlockTokensRange, g.BlockTokens, "block_tokens", "block size of the generated hashes", between(1, MaxBlockTokens))
	return g
}

// ownRange reports whether r is in the scenario file itself (filename)
// or an override argument (--set), rather than in a file it extends.
func ownRange(filename string, r hcl.Range) bool {
	return r.Filename == filename || strings.HasPrefix(r.Filename, "--set ")
}

package cluster

import (
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// swebenchConfig is generator "swebench"'s workload configuration: the
// content model's defaults with the scenario's attributes laid over them
// (issue 19: every content-model constant is an HCL attribute).
func swebenchConfig(g topology.Generator) workload.SWEBenchConfig {
	c := workload.SWEBenchDefaults(workload.SWEBenchConfig{Sessions: g.Sessions, Requests: g.Requests,
		Content: g.Content, ActiveSessions: g.ActiveSessions, BlockTokens: g.BlockTokens})
	SWEBenchOverrides(&c, g.SWEBench)
	c.Exact = true
	return c
}

// SWEBenchOverrides sets the fields of c that p sets (the experiment's
// sensitivity runs use it too).
func SWEBenchOverrides(c *workload.SWEBenchConfig, p topology.SWEBenchParams) {
	if p.Duration != nil {
		c.Duration = *p.Duration
	}
	if p.GapP50 != nil {
		c.GapP50 = *p.GapP50
	}
	if p.GapSigma != nil {
		c.GapSigma = *p.GapSigma
	}
	if p.TurnsSigma != nil {
		c.TurnsSigma = *p.TurnsSigma
	}
	if p.MinTurns != nil {
		c.MinTurns = *p.MinTurns
	}
	if p.SystemTokens != nil {
		c.SystemTokens = *p.SystemTokens
	}
	if p.IssueTokens != nil {
		c.IssueTokens = *p.IssueTokens
	}
	if p.IssueSigma != nil {
		c.IssueSigma = *p.IssueSigma
	}
	if p.AppendP50 != nil {
		c.AppendP50 = *p.AppendP50
	}
	if p.AppendSigma != nil {
		c.AppendSigma = *p.AppendSigma
	}
	if p.MidAppendProb != nil {
		c.MidAppendProb = *p.MidAppendProb
	}
	if p.MidAppendMin != nil {
		c.MidAppendMin = *p.MidAppendMin
	}
	if p.MidAppendMax != nil {
		c.MidAppendMax = *p.MidAppendMax
	}
	if p.LargeAppendProb != nil {
		c.LargeAppendProb = *p.LargeAppendProb
	}
	if p.LargeAppendMin != nil {
		c.LargeAppendMin = *p.LargeAppendMin
	}
	if p.LargeAppendMax != nil {
		c.LargeAppendMax = *p.LargeAppendMax
	}
	if p.OutputP50 != nil {
		c.OutputP50 = *p.OutputP50
	}
	if p.OutputSigma != nil {
		c.OutputSigma = *p.OutputSigma
	}
	if p.MaxOutput != nil {
		c.MaxOutput = *p.MaxOutput
	}
	if p.MaxContext != nil {
		c.MaxContext = *p.MaxContext
	}
	if p.CondensedTokens != nil {
		c.CondensedTokens = *p.CondensedTokens
	}
	if p.ServiceBase != nil {
		c.ServiceBase = *p.ServiceBase
	}
	if p.TokenTime != nil {
		c.TokenTime = *p.TokenTime
	}
}

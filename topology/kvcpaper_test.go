package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestEpsilonDefault: ε defaults to |D| (spec §2.4) and an explicit value wins.
func TestEpsilonDefault(t *testing.T) {
	two := p0 + d0 + d1 + l00 + l01
	assert.Equal(t, 2, mustParse(t, two+kvc, testOpts).Router.Epsilon, "|D| = 2")
	assert.Equal(t, 1, mustParse(t, p0+d0+l00+kvc, testOpts).Router.Epsilon, "|D| = 1")
	assert.Equal(t, 5, mustParse(t, two+"\nrouter \"kvc\" {\n  epsilon = 5\n}\n", testOpts).Router.Epsilon)
	assert.Equal(t, DefaultEpsilon, DefaultRouter("kvc").Epsilon, "hand-built specs keep §7's 2")
}

// TestKVCPaperRouterOptions: the issue-10 kvc options decode and default false.
func TestKVCPaperRouterOptions(t *testing.T) {
	r := mustParse(t, p0+d0+l00+kvc, testOpts).Router
	assert.False(t, r.ResidentAppend)
	assert.False(t, r.PrefillCacheBackup)
	r = mustParse(t, p0+d0+l00+"\nrouter \"kvc\" {\n  resident_append = true\n  prefill_cache_backup = true\n}\n", testOpts).Router
	assert.True(t, r.ResidentAppend)
	assert.True(t, r.PrefillCacheBackup)
}

// TestMissRule: cache_aware_dp's miss_rule and inclusive_match.
func TestMissRule(t *testing.T) {
	fused := `
fused "w0" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}
`
	lr := mustParse(t, fused+"\nrouter \"cache_aware_dp\" {}\n", testOpts).LocalRouter
	assert.Equal(t, MissSmallestTree, lr.MissRule)
	assert.False(t, lr.InclusiveMatch)
	assert.Equal(t, 0.3, lr.CacheThreshold)
	assert.Equal(t, 64, lr.BalanceAbs)
	assert.Equal(t, 1.5, lr.BalanceRel)
	lr = mustParse(t, fused+"\nrouter \"cache_aware_dp\" {\n  miss_rule = \"least_loaded\"\n  inclusive_match = true\n}\n", testOpts).LocalRouter
	assert.Equal(t, MissLeastLoaded, lr.MissRule)
	assert.True(t, lr.InclusiveMatch)
	msg := parseErr(t, fused+"\nrouter \"cache_aware_dp\" {\n  miss_rule = \"smallest_tre\"\n}\n", testOpts)
	assert.Contains(t, msg, "Invalid miss_rule")
	assert.Contains(t, msg, `"smallest_tree"?`)
	assert.Contains(t, msg, "test.hcl:")
}

// TestSWEBenchGeneratorAndClientCap: generator "swebench" / "burst" and
// the workload's client_cap decode; attributes of another generator are errors.
func TestSWEBenchGeneratorAndClientCap(t *testing.T) {
	wl := func(body string) string { return p0 + d0 + l00 + kvc + "\nworkload {\n" + body + "\n}\n" }
	w := mustParse(t, wl("client_cap = 32\ngenerator \"swebench\" {\n  content = \"v1-stress\"\n  requests = 900\n  active_sessions = 4\n}"), testOpts).Workload
	assert.Equal(t, 32, w.ClientCap)
	assert.Equal(t, Generator{Kind: "swebench", Content: "v1-stress", Requests: 900, ActiveSessions: 4, Sessions: 52, BlockTokens: 24,
		Turns: w.Generator.Turns, SystemTokens: w.Generator.SystemTokens, FirstTokens: w.Generator.FirstTokens,
		AppendTokens: w.Generator.AppendTokens, OutputTokens: w.Generator.OutputTokens, ThinkTime: w.Generator.ThinkTime,
		SessionStagger: w.Generator.SessionStagger}, w.Generator)
	assert.Equal(t, "burst", mustParse(t, wl("generator \"burst\" {}"), testOpts).Workload.Generator.Kind)
	assert.Zero(t, mustParse(t, wl("generator \"agentic\" {}"), testOpts).Workload.ClientCap)
	for src, want := range map[string]string{
		wl("generator \"swebench\" {\n  turns = 3\n}"):                    "does not take \"turns\"",
		wl("generator \"agentic\" {\n  content = \"paper\"\n}"):           "Not an agentic generator attribute",
		wl("generator \"swebench\" {\n  content = \"pappr\"\n}"):          "content",
		wl("generator \"burst\" {\n  sessions = 3\n}"):                    "does not take \"sessions\"",
		wl("generator \"swebnch\" {}"):                                    `"swebench"?`,
		wl("client_cap = -1\ngenerator \"agentic\" {}"):                   "client_cap",
		wl("generator \"swebench\" {\n  sessions = 9\n  requests = 3\n}"): "Too few requests",
	} {
		assert.Contains(t, parseErr(t, src, testOpts), want)
	}
}

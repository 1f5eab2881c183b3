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

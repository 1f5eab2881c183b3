package topology

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCountsAndSeedsAreWhole: decodes = -3 made workers d0, d-1, d-2;
// 2.5 made three; seed = 4.5 ran as 4. Each is now an error.
func TestCountsAndSeedsAreWhole(t *testing.T) {
	dyn := "variable \"n\" {\n  default = %s\n}\n" + p0 +
		"dynamic \"decode\" {\n  for_each = range(var.n)\n  labels = [\"d${decode.value}\"]\n  content {\n    gpu = \"H200-SXM\"\n    model = \"qwen3-coder-30b-a3b\"\n  }\n}\n" + kvc
	for n, want := range map[string]string{"-3": "range(n) needs n >= 0", "2.5": "must be a whole number, got 2.5"} {
		assert.Contains(t, parseErr(t, strings.Replace(dyn, "%s", n, 1), Options{}), want, n)
	}
	spec := mustParse(t, strings.Replace(dyn, "%s", "0", 1)+"decode \"x\" {\n  gpu = \"H200-SXM\"\n  model = \"qwen3-coder-30b-a3b\"\n}\n"+
		"link \"p0\" \"x\" {\n  transport = \"rdma\"\n  device = \"mlx5_0\"\n  bandwidth = \"200Gbps\"\n}\n", Options{})
	require.Len(t, spec.Decode, 1, "range(0) is empty")
	mustParse(t, minimal+"variable \"r\" {\n  default = range(5, -1, -2)\n}\n", Options{}) // start, end, step may count down

	for seed, want := range map[string]string{"4.5": "got 4.5", "-1": "got -1", "1e30": "got 1e+30", "\"x\"": "got string"} {
		msg := parseErr(t, minimal+"workload {\n  seed = "+seed+"\n}\n", Options{})
		assert.Contains(t, msg, "must be a whole number", seed)
		assert.Contains(t, msg, want, seed)
	}
	spec = mustParse(t, minimal+"workload {\n  seed = 18446744073709551615\n}\n", Options{})
	assert.Equal(t, uint64(18446744073709551615), spec.Workload.Seed, "kept exactly")
	assert.Contains(t, parseErr(t, minimal+"chaos {\n  seed = 0.5\n  horizon = \"1s\"\n  mtbf_decode = \"1s\"\n}\n", Options{}), "must be a whole number")
	_, err := Parse("t.hcl", []byte(minimal+"workload {\n  seed = var.s\n}\nvariable \"s\" {\n  default = 1\n}\n"), Options{Vars: map[string]string{"s": "4.5"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "got 4.5")
}

// TestCountsAreNeverTruncated: gohcl truncated every integer attribute
// (sessions = 2.5 ran 2 sessions); each is now an error at the attribute.
func TestCountsAreNeverTruncated(t *testing.T) {
	for _, c := range []struct{ old, new string }{
		{`decode "d0" {`, "decode \"d0\" {\n  tp = 1.5"},
		{`decode "d0" {`, "decode \"d0\" {\n  kv_budget_tokens = 1000.5"},
		{`router "kvc" {}`, "router \"kvc\" {\n  epsilon = 2.5\n}"},
		{`router "kvc" {}`, "router \"kvc\" {}\nworkload {\n  max_requests = 10.5\n}"},
		{`router "kvc" {}`, "router \"kvc\" {}\nworkload {\n  generator \"agentic\" {\n    sessions = 5 / 2\n  }\n}"},
	} {
		src := strings.Replace(minimal, c.old, c.new, 1)
		msg := parseErr(t, src, Options{})
		assert.Contains(t, msg, "Not a whole number", c.new)
		assert.Contains(t, msg, "test.hcl:", c.new)
	}
	spec := mustParse(t, strings.Replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  epsilon = 6 / 2\n}", 1), Options{})
	assert.Equal(t, 3, spec.Router.Epsilon, "a whole result of an expression is fine")
	assert.Contains(t, parseErr(t, strings.Replace(twoBuckets, "[0, 99]", "[0, 99.5]", 1), Options{}), "Not a whole number")
}

// TestDegradeFloor: a degradation below the bandwidth floor (1e-9 of 200
// Gb/s is 200 b/s) is refused; compounding counts, a restore resets it.
func TestDegradeFloor(t *testing.T) {
	fault := func(at, kv string) string {
		return "\n fault {\n  at = \"" + at + "\"\n  " + kv + "\n }"
	}
	with := func(fs ...string) string {
		return strings.Replace(minimal, `bandwidth = "200Gbps"`, `bandwidth = "200Gbps"`+strings.Join(fs, ""), 1)
	}
	assert.Contains(t, parseErr(t, with(fault("1s", "degrade = 1e-9")), Options{}), "below the bandwidth floor")
	assert.Contains(t, parseErr(t, with(fault("1s", "degrade = 1e-3"), fault("2s", "degrade = 1e-3")), Options{}), "below the bandwidth floor")
	mustParse(t, with(fault("1s", "degrade = 1e-3"), fault("2s", "restore = true"), fault("3s", "degrade = 1e-3")), Options{})
}

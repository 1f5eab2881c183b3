package topology

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSWEBenchParams: every content-model attribute of generator
// "swebench" decodes into SWEBenchParams (unset ones stay nil), explicit
// zeros are values, and bad values, inconsistent pairs and attributes of
// another generator are diagnostics with the file position.
func TestSWEBenchParams(t *testing.T) {
	wl := func(kind, body string) string {
		return p0 + d0 + l00 + kvc + "\nworkload {\ngenerator \"" + kind + "\" {\n" + body + "\n}\n}\n"
	}
	p := mustParse(t, wl("swebench", `
  large_append_prob = 0
  large_append_min  = 9000
  large_append_max  = 9000
  mid_append_prob   = 0.1
  gap_sigma         = 0.5
  issue_sigma       = 0
  system_tokens     = 0
  output_p50        = 300
  service_base      = "0s"
  duration          = "2h"
`), testOpts).Workload.Generator.SWEBench
	f0, i0 := 0.0, 0
	assert.Equal(t, &f0, p.LargeAppendProb, "an explicit 0 is kept")
	assert.Equal(t, 9000, *p.LargeAppendMin)
	assert.Equal(t, 9000, *p.LargeAppendMax)
	assert.Equal(t, 0.1, *p.MidAppendProb)
	assert.Equal(t, 0.5, *p.GapSigma)
	assert.Equal(t, &f0, p.IssueSigma)
	assert.Equal(t, &i0, p.SystemTokens)
	assert.Equal(t, 300, *p.OutputP50)
	assert.Equal(t, time.Duration(0), *p.ServiceBase)
	assert.Equal(t, 2*time.Hour, *p.Duration)
	assert.Nil(t, p.AppendP50, "unset: the content model's default")
	assert.Nil(t, p.TokenTime)
	assert.Equal(t, SWEBenchParams{}, mustParse(t, wl("swebench", ""), testOpts).Workload.Generator.SWEBench)

	for src, want := range map[string]string{
		wl("swebench", "mid_append_prob = 1.5"):                            "mid_append_prob",
		wl("swebench", "gap_sigma = -1"):                                   "gap_sigma",
		wl("swebench", "large_append_min = 30000"):                         "Invalid append range",
		wl("swebench", "mid_append_max = 100"):                             "Invalid append range",
		wl("swebench", "mid_append_prob = 0.9\nlarge_append_prob = 0.2"):   "Invalid append probabilities",
		wl("swebench", "content = \"v1-stress\"\nlarge_append_prob = 0.9"): "Invalid append probabilities",
		wl("swebench", "max_context = 3000"):                               "Invalid max_context",
		wl("swebench", "gap_p50 = \"0s\""):                                 "gap_p50",
		wl("agentic", "large_append_prob = 0.1"):                           "Not an agentic generator attribute",
		wl("burst", "output_p50 = 10"):                                     "does not take \"output_p50\"",
		wl("burst", "system_tokens = 10"):                                  "does not take \"system_tokens\"",
	} {
		msg := parseErr(t, src, testOpts)
		assert.Contains(t, msg, want, src)
		assert.Contains(t, msg, "test.hcl:", src)
	}
}

package topology

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRoutingLogParams: routing_log and log_candidates default to on and
// 8, take their values from the router block of the P/D policies that
// log, and log_candidates below 1 is an error at its line.
func TestRoutingLogParams(t *testing.T) {
	for _, tc := range []struct {
		router string
		log    bool
		k      int
	}{
		{`router "kvc" {}`, true, DefaultLogCandidates},
		{`router "kvc" {
  routing_log = false
}`, false, DefaultLogCandidates},
		{`router "kvc" {
  log_candidates = 3
}`, true, 3},
		{`router "kv_score" {
  log_candidates = 200
}`, true, 200},
		{`router "vanilla" {
  routing_log = false
}`, false, DefaultLogCandidates},
		{`router "sticky_only" {
  routing_log = false
}`, false, DefaultLogCandidates},
	} {
		spec := mustParse(t, p0+d0+l00+"\n"+tc.router+"\n", testOpts)
		assert.Equal(t, tc.log, spec.Router.RoutingLog, tc.router)
		assert.Equal(t, tc.k, spec.Router.LogCandidates, tc.router)
	}

	src := p0 + d0 + l00 + "\nrouter \"kvc\" {\n  log_candidates = 0 #!\n}\n"
	msg := parseErr(t, src, testOpts)
	require.Contains(t, msg, "log_candidates")
	assert.Contains(t, msg, "test.hcl:"+strconv.Itoa(markedLine(t, src))+":")

	// vanilla lists no candidates: log_candidates is not its parameter.
	msg = parseErr(t, p0+d0+l00+"\nrouter \"vanilla\" {\n  log_candidates = 3\n}\n", testOpts)
	assert.Contains(t, msg, "log_candidates")
}

package served

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
)

// promtoolAllowed are the lint findings of `promtool check metrics` that
// /metrics keeps on purpose: vLLM's own names (its dashboards query them
// as they are).
func promtoolAllowed(line string) bool {
	return strings.HasPrefix(line, "vllm:") || strings.Contains(line, `metric names should not contain ":"`)
}

// promlint runs promtool check metrics on an exposition and returns its
// findings but the allowed ones, and its whole output.
func promlint(promtool string, body []byte) (bad []string, out []byte) {
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, _ = cmd.CombinedOutput() // exit 3 on lint findings: judged line by line
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !promtoolAllowed(l) {
			bad = append(bad, l)
		}
	}
	return bad, out
}

// Issue 21 row 11: serve's /metrics passes `promtool check metrics`
// (Prometheus's own linter, Debian package prometheus) apart from the
// vLLM names with ':', at start and after a request.
func TestServeMetricsPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus): the lint is not checked")
	}
	base, stop := startServe(t, scenarios.Default, Options{TimeScale: 50})
	check := func(when string) {
		res, err := http.Get(base + "/metrics")
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		bad, out := promlint(promtool, body)
		assert.Empty(t, bad, "%s: promtool check metrics:\n%s", when, out)
	}
	// The check can fail: a counter without _total is a finding.
	bad, _ := promlint(promtool, []byte("# HELP foo x\n# TYPE foo counter\nfoo 1\n# HELP vllm:bar y\n# TYPE vllm:bar gauge\nvllm:bar 1\n"))
	assert.Equal(t, []string{`foo counter metrics should have "_total" suffix`}, bad)
	check("at start")
	code, body := post(t, base, "lint", "hello there", 4)
	require.Equal(t, http.StatusOK, code, body)
	check("after a request")
	_, err = stop()
	require.NoError(t, err)
}

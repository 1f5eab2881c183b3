package topology

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseErr parses src (expecting failure) and returns the rendered error.
func parseErr(t *testing.T, src string, opts Options) string {
	t.Helper()
	spec, err := Parse("test.hcl", []byte(src), opts)
	require.Error(t, err)
	assert.Nil(t, spec)
	var de *DiagError
	require.True(t, errors.As(err, &de), "error is %T", err)
	require.True(t, de.Diags.HasErrors())
	return err.Error()
}

// markedLine returns the 1-based line of src that contains "#!".
func markedLine(t *testing.T, src string) int {
	t.Helper()
	for i, line := range strings.Split(src, "\n") {
		if strings.Contains(line, "#!") {
			return i + 1
		}
	}
	t.Fatalf("no #! marker in\n%s", src)
	return 0
}

// flat joins word-wrapped lines so phrases can be matched across wraps.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkMarkedDiag parses src (expecting failure) and checks the
// diagnostic the table cases of this package expect: it points at the line
// marked "#!", holds every phrase (across word wraps), and comes without
// the cascading "value must be known" ones. It returns the rendered error.
func checkMarkedDiag(t *testing.T, src string, opts Options, phrases []string) string {
	t.Helper()
	msg := parseErr(t, src, opts)
	want := "test.hcl:" + strconv.Itoa(markedLine(t, src)) + ":"
	assert.Contains(t, msg, want, "diagnostic must point at the marked line")
	for _, p := range phrases {
		assert.Contains(t, flat(msg), p)
	}
	assert.NotContains(t, msg, "value must be known", "cascading diagnostics must be suppressed")
	return msg
}

// diagSummaries parses src (expecting failure) and returns the summary of
// every diagnostic, in the order they are reported.
func diagSummaries(t *testing.T, src string, opts Options) []string {
	t.Helper()
	spec, err := Parse("test.hcl", []byte(src), opts)
	require.Error(t, err)
	assert.Nil(t, spec)
	var de *DiagError
	require.ErrorAs(t, err, &de)
	var summaries []string
	for _, d := range de.Diags {
		summaries = append(summaries, d.Summary)
	}
	return summaries
}

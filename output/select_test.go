package output

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOutputs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"all", nil, ""},
		{"summary", []string{"summary.json"}, ""},
		{"routing_log, per_request", []string{"per_request.csv", "routing_log.jsonl", "summary.json"}, ""},
		{"instances.csv,summary", []string{"instances.csv", "summary.json"}, ""},
		{"links,links", nil, "links given twice"},
		{"per-request", nil, `unknown output "per-request"`},
	} {
		got, err := ParseOutputs(c.in)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	assert.Len(t, OutputNames(), len(Files))
}

package experiment

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonKeys collects the paths of v's leaves (scalars, null, arrays of
// scalars; arrays of objects as "[]"), up to depth.
func jsonKeys(prefix string, v any, depth int, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if depth == 0 {
			out[prefix] = true
			return
		}
		for k, c := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			jsonKeys(p, c, depth-1, out)
		}
	case []any:
		objects := false
		for _, c := range x {
			if _, ok := c.(map[string]any); ok {
				objects = true
				jsonKeys(prefix+"[]", c, depth, out)
			}
		}
		if !objects {
			out[prefix] = true
		}
	default:
		out[prefix] = true
	}
}

// TestReportJSONDocumented: every key of report.json down to the figures'
// and the sensitivity moves' fields is in docs/OUTPUTS.md's experiment
// section.
func TestReportJSONDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end experiment")
	}
	rep, err := Run(context.Background(), "kvc-paper", Options{Short: true, Parallel: 2})
	require.NoError(t, err)
	by := map[string]*runOut{}
	base := &seedRuns{rep.outs["v2-tcp-s1"], rep.outs["v2-rdma-s1"], rep.outs["v1-tcp-s1"], rep.outs["dp4-s1"]}
	for _, p := range Params() {
		for _, end := range []string{"low", "high", "unfitted"} {
			by[sensName(p.Name, end, "v2-tcp")], by[sensName(p.Name, end, "v2-rdma")] = base.kvc, base.kvcR
			by[sensName(p.Name, end, "v1-tcp")], by[sensName(p.Name, end, "dp4")] = base.v1, base.dp
		}
	}
	rep.Sensitivity = sensitivity(1, base, by)
	rep.Sensitivity.Deciders = []Decider{{Param: "mfu", Label: LabelAssumed, Figures: 1}}
	var b strings.Builder
	require.NoError(t, rep.WriteJSON(&b))
	var v any
	require.NoError(t, json.Unmarshal([]byte(b.String()), &v))
	keys := map[string]bool{}
	jsonKeys("", v, 5, keys)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "OUTPUTS.md"))
	require.NoError(t, err)
	i := strings.Index(string(doc), "## Experiment reports")
	require.GreaterOrEqual(t, i, 0)
	sec := string(doc[i:])
	var missing []string
	for k := range keys {
		if strings.HasPrefix(k, "runs[].") || strings.HasPrefix(k, "sections[].tables[]") {
			continue // listed in one row
		}
		if !strings.Contains(sec, "| "+k+" |") && !strings.Contains(sec, "| "+k+"[] |") {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "report.json keys missing from docs/OUTPUTS.md")
}

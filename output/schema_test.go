package output_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// docField is one documented column or key.
type docField struct {
	path     string
	optional bool // its description starts with "Only"
}

var braces = regexp.MustCompile(`\{([^{}]*)\}`)

// expand expands the first {a,b,…} of s, recursively.
func expand(s string) []string {
	m := braces.FindStringSubmatchIndex(s)
	if m == nil {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[m[2]:m[3]], ",") {
		out = append(out, expand(s[:m[0]]+alt+s[m[1]:])...)
	}
	return out
}

// docTables parses docs/OUTPUTS.md: per "## file" section, the rows of
// its "| Field | Unit | Description |" tables in order, each row's cells
// after the leading "|", trimmed (Field, Unit, Description, ...;
// separator rows left out).
func docTables(t *testing.T) map[string][][]string {
	t.Helper()
	f, err := os.Open("../docs/OUTPUTS.md")
	require.NoError(t, err)
	defer f.Close()
	tables := map[string][][]string{}
	sec := ""
	inTable := false // inside a "| Field | Unit | Description |" table
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			sec = strings.TrimSpace(strings.TrimPrefix(line, "## "))
			continue
		}
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		if strings.HasPrefix(line, "| Field |") {
			inTable = true
			continue
		}
		cells := strings.Split(line, "|")
		if sec == "" || !inTable || len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		row := make([]string, 0, len(cells)-1) // at least Field, Unit, Description
		for _, c := range cells[1:] {
			row = append(row, strings.TrimSpace(c))
		}
		tables[sec] = append(tables[sec], row)
	}
	require.NoError(t, sc.Err())
	return tables
}

// readDoc parses docs/OUTPUTS.md: per "## file" section, the Field column
// of its table, in order (a field with {a,b} alternatives expanded).
func readDoc(t *testing.T) map[string][]docField {
	t.Helper()
	doc := map[string][]docField{}
	for sec, rows := range docTables(t) {
		for _, row := range rows {
			for _, p := range expand(row[0]) {
				doc[sec] = append(doc[sec], docField{path: p, optional: strings.HasPrefix(row[2], "Only")})
			}
		}
	}
	return doc
}

// jsonPaths lists the leaf paths of v (arrays as [], empty objects and
// arrays as their own path).
func jsonPaths(prefix string, v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[prefix] = true
		}
		for k, c := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			jsonPaths(p, c, out)
		}
	case []any:
		if len(x) == 0 {
			out[prefix] = true
		}
		for _, c := range x {
			jsonPaths(prefix+"[]", c, out)
		}
	default:
		out[prefix] = true
	}
}

// matches reports whether documented pattern pat (with <name> segments)
// covers path p.
func matches(pat, p string) bool {
	ps, qs := strings.Split(pat, "."), strings.Split(p, ".")
	if len(ps) != len(qs) {
		return false
	}
	for i := range ps {
		if strings.HasPrefix(ps[i], "<") && strings.HasSuffix(ps[i], ">") {
			continue
		}
		if ps[i] != qs[i] {
			return false
		}
	}
	return true
}

func documented(fields []docField, p string) bool {
	for _, f := range fields {
		if matches(f.path, p) || strings.HasPrefix(f.path, p+".") || strings.HasPrefix(f.path, p+"[]") {
			return true
		}
	}
	return false
}

// checkJSON checks found key paths against the documented fields: every
// path is documented, and every documented field that is not optional
// was found.
func checkJSON(t *testing.T, file string, fields []docField, found map[string]bool) {
	t.Helper()
	for p := range found {
		assert.True(t, documented(fields, p), "%s: key %q is not in docs/OUTPUTS.md", file, p)
	}
	for _, f := range fields {
		if f.optional {
			continue
		}
		ok := false
		for p := range found {
			if matches(f.path, p) || strings.HasPrefix(p, f.path+".") || strings.HasPrefix(p, f.path+"[]") {
				ok = true
				break
			}
		}
		if !ok && strings.Contains(f.path, "<") {
			// A map documented by its entries may be empty.
			ok = found[f.path[:strings.LastIndex(f.path, ".")]]
		}
		assert.True(t, ok, "%s: documented key %q not found in the outputs", file, f.path)
	}
}

// TestOutputsDocumented reads the files of real runs (a KVC P/D run and a
// bucketed run) and checks every column and key against docs/OUTPUTS.md.
func TestOutputsDocumented(t *testing.T) {
	doc := readDoc(t)
	var dirs []string
	for _, name := range []string{"1p3d-tcp.hcl", "buckets-3.hcl", "chaos.hcl"} {
		dir, ok := runScenario(t, name)
		require.True(t, ok)
		dirs = append(dirs, dir)
	}
	// A short wall-clock run for the clock keys.
	spec := testkit.Scenario(t, scenarios.Default, topology.Options{})
	spec.Workload.Generator.Sessions, spec.Workload.Generator.Turns = 2, 2
	spec.Workload.Clock, spec.Workload.TimeScale = topology.ClockWall, 1000
	res, err := actors.Run(context.Background(), spec, actors.Options{WallTimeout: time.Minute})
	require.NoError(t, err)
	wall := t.TempDir()
	require.NoError(t, output.Write(wall, res, output.WriteOptions{}))
	dirs = append(dirs, wall)
	optional := map[string]bool{}
	for _, f := range doc["summary.json"] {
		optional[f.path] = f.optional
	}
	for _, k := range []string{"clock.fidelity", "clock.emulated_lateness_ms.p99", "clock.saturated_share", "clock.lateness_ms.samples"} {
		assert.True(t, optional[k], "%s is documented as Only wall runs", k)
	}
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		want := append([]string(nil), output.Files...)
		sort.Strings(want)
		assert.Equal(t, want, names, "the same set of files for every policy")
		for _, name := range names {
			assert.Contains(t, doc, name, "docs/OUTPUTS.md has no section for %s", name)
			if strings.HasSuffix(name, ".csv") {
				f, err := os.Open(filepath.Join(dir, name))
				require.NoError(t, err)
				header, err := csv.NewReader(f).Read()
				f.Close()
				require.NoError(t, err, name)
				var cols []string
				for _, d := range doc[name] {
					if d.optional && !slices.Contains(header, d.path) {
						continue // "Only …" columns (served runs' client_*)
					}
					cols = append(cols, d.path)
				}
				assert.Equal(t, cols, header, "%s: columns differ from docs/OUTPUTS.md", name)
			}
		}
	}
	sum := map[string]bool{}
	logKeys := map[string]bool{}
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(b, &v))
		jsonPaths("", v, sum)
		if dir == wall {
			for _, k := range []string{"clock.fidelity", "clock.emulated_lateness_ms.p99", "clock.saturated_share", "clock.fidelity_bound"} {
				assert.True(t, sum[k], "the wall run has %s", k)
			}
		}
		b, err = os.ReadFile(filepath.Join(dir, "routing_log.jsonl"))
		require.NoError(t, err)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			var v any
			require.NoError(t, json.Unmarshal([]byte(line), &v))
			jsonPaths("", v, logKeys)
		}
	}
	checkJSON(t, "summary.json", doc["summary.json"], sum)
	require.NotEmpty(t, logKeys, "the bucketed run logs its decisions")
	checkJSON(t, "routing_log.jsonl", doc["routing_log.jsonl"], logKeys)
}

package output_test

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
)

// readCSV reads a CSV file of dir as maps by header.
func readCSV(t *testing.T, dir, name string) []map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	out := make([]map[string]string, 0, len(rows)-1)
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, h := range rows[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

var lossCause = regexp.MustCompile(`^(capacity|transfer-failed|session-end|worker-crashed)@([0-9.]+)s(?:-for-r([0-9]+)|-r([0-9]+))?(?:-on-(.+))?$`)

// TestKVCauseEverywhere: on every embedded scenario (the shared Claude Code
// and Mooncake traces when ../shared is present), no Seed, Reseed or
// Fallback row of per_request.csv lacks a kv_cause, every other row has
// none, and every loss a cause names is a row of evictions.csv (same
// session, cause, time and request).
func TestKVCauseEverywhere(t *testing.T) {
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			skipLarge(t, name)
			dir, ok := runScenario(t, name)
			if !ok {
				t.Skip("trace not on this machine (../shared/traces)")
			}
			type key struct{ session, cause, req string }
			evicted := map[key][]float64{} // eviction times, s
			for _, e := range readCSV(t, dir, "evictions.csv") {
				ms, err := strconv.ParseFloat(e["time_ms"], 64)
				require.NoError(t, err)
				k := key{e["session"], e["cause"], e["for_request"]}
				evicted[k] = append(evicted[k], ms/1000)
			}
			counts := map[string]int{}
			for _, r := range readCSV(t, dir, "per_request.csv") {
				cause, mode := r["kv_cause"], r["mode"]
				switch mode {
				case "Seed", "Reseed", "Fallback":
					require.NotEmpty(t, cause, "request %s (%s, session %s turn %s) has no kv_cause", r["id"], mode, r["session"], r["turn"])
				default:
					require.Empty(t, cause, "request %s is %s", r["id"], mode)
					continue
				}
				head := cause
				if i := strings.IndexAny(cause, "@:"); i >= 0 {
					head = cause[:i]
				}
				counts[mode+" "+head]++
				m := lossCause.FindStringSubmatch(cause)
				if m == nil {
					continue
				}
				if m[1] == "worker-crashed" {
					continue // evictions.csv has the crash's rows at the crash; the router names the fault's time too
				}
				sec, err := strconv.ParseFloat(m[2], 64)
				require.NoError(t, err)
				found := false
				for _, at := range evicted[key{r["session"], m[1], m[3] + m[4]}] {
					found = found || math.Abs(at-sec) <= 0.001 // kv_cause has ms resolution
				}
				require.True(t, found, "request %s: %q names no row of evictions.csv", r["id"], cause)
			}
			t.Logf("kv causes: %v", counts)
		})
	}
}

package output_test

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// readCSV reads a CSV file of dir as maps by header.
func readCSV(t require.TestingT, dir, name string) []map[string]string {
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

// checkKVCause (called by TestGolden on every embedded scenario's run, the
// shared Claude Code and Mooncake traces included when ../shared is
// present): no Seed, Reseed or Fallback row of per_request.csv lacks a
// kv_cause, every other row has none, and every loss a cause names is a row
// of evictions.csv (same session, cause, time and request).
func checkKVCause(t require.TestingT, dir string) {
	type key struct{ session, cause, req string }
	evicted := map[key][]float64{} // eviction times, s
	for _, e := range readCSV(t, dir, "evictions.csv") {
		ms, err := strconv.ParseFloat(e["time_ms"], 64)
		require.NoError(t, err)
		k := key{e["session"], e["cause"], e["for_request"]}
		evicted[k] = append(evicted[k], ms/1000)
	}
	for _, r := range readCSV(t, dir, "per_request.csv") {
		cause, mode := r["kv_cause"], r["mode"]
		switch mode {
		case "Seed", "Reseed", "Fallback":
			require.NotEmpty(t, cause, "request %s (%s, session %s turn %s) has no kv_cause", r["id"], mode, r["session"], r["turn"])
		default:
			require.Empty(t, cause, "request %s is %s", r["id"], mode)
			continue
		}
		m := lossCause.FindStringSubmatch(cause)
		if m == nil || m[1] == "worker-crashed" {
			continue // the router names a crash by the fault's time; evictions.csv has its rows
		}
		sec, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		found := false
		for _, at := range evicted[key{r["session"], m[1], m[3] + m[4]}] {
			found = found || math.Abs(at-sec) <= 0.0005+1e-9 // the cause rounds to ms
		}
		require.True(t, found, "request %s: %q names no row of evictions.csv", r["id"], cause)
	}
}

// TestKVCauseChecked: the check above fails on a row without a cause.
func TestKVCauseChecked(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "evictions.csv"), []byte("time_ms,worker,session,tokens,cause,for_request\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "per_request.csv"), []byte("id,session,turn,mode,kv_cause\n1,s,1,Reseed,capacity@1.000s-for-r0\n"), 0o644))
	for _, rows := range []string{
		"1,s,1,Reseed,capacity@1.000s-for-r0\n", // names no eviction
		"1,s,1,Fallback,\n",                     // no cause
		"1,s,1,Direct,first-turn\n",             // a cause where none belongs
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "per_request.csv"), []byte("id,session,turn,mode,kv_cause\n"+rows), 0o644))
		ft := &failT{}
		done := make(chan struct{})
		go func() { defer close(done); checkKVCause(ft, dir) }()
		<-done
		require.True(t, ft.failed, "the check fails on %q", rows)
	}
}

// failT records a failure (require.TestingT).
type failT struct{ failed bool }

func (f *failT) Errorf(string, ...any) { f.failed = true }
func (f *failT) FailNow()              { f.failed = true; runtime.Goexit() }

// TestV1ThrashInScenario: in kvc-v1-1p3d (v1, all_blacklisted defaulting
// to degenerate_fallback), once a session's request falls back because
// every decode worker blacklists it, every later request of the session
// is such a Fallback too (v1 never resets a counter, §3.4), round robin
// over the decode workers; and the run has some.
func TestV1ThrashInScenario(t *testing.T) {
	dir, ok := runScenario(t, "kvc-v1-1p3d.hcl")
	require.True(t, ok)
	rows := readCSV(t, dir, "per_request.csv")
	sort.SliceStable(rows, func(i, j int) bool {
		a, _ := strconv.ParseFloat(rows[i]["arrival_ms"], 64)
		b, _ := strconv.ParseFloat(rows[j]["arrival_ms"], 64)
		return a < b
	})
	stuck := map[string]bool{}
	ds := map[string]map[string]bool{}
	n := 0
	for _, r := range rows {
		s := r["session"]
		if stuck[s] {
			require.Equal(t, "Fallback", r["mode"], "request %s of session %s after its blacklisting", r["id"], s)
			require.Equal(t, "blacklisted", r["kv_cause"], "request %s", r["id"])
		}
		if r["kv_cause"] == "blacklisted" && r["mode"] == "Fallback" {
			stuck[s] = true
			n++
			if ds[s] == nil {
				ds[s] = map[string]bool{}
			}
			ds[s][r["d_worker"]] = true
		}
	}
	require.Positive(t, n, "the scenario exercises §3.4's loop")
	moved := false
	for _, m := range ds {
		moved = moved || len(m) > 1
	}
	require.True(t, moved, "a stuck session's Fallbacks go round robin over the decode workers")
}

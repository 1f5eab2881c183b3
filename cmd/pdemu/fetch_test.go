package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/tracefetch"
)

func TestTraceFetchListsTheCatalog(t *testing.T) {
	dir := t.TempDir()
	out, _, err := runCLI(t, "trace", "fetch", "--dir", dir)
	require.NoError(t, err)
	assert.Contains(t, out, "trace cache: "+dir)
	for _, n := range tracefetch.Names() {
		assert.Contains(t, out, n)
	}
	assert.Contains(t, out, "callanjfox/kv-cache-tester@c9b3da54fc2f")
	assert.NotContains(t, out, " yes ", "nothing fetched yet")
}

func TestTraceFetchUnknownNameExits2(t *testing.T) {
	_, _, err := runCLI(t, "trace", "fetch", "mooncak", "--dir", t.TempDir())
	require.Error(t, err)
	assert.Equal(t, exitBadInput, exitCode(err))
	assert.Contains(t, err.Error(), `Did you mean "mooncake"?`)
}

// A mirror serving other bytes than the pinned ones: exit 1, a clear
// error, and no file in the cache (nor a partial one).
func TestTraceFetchChecksumMismatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	_, _, err := runCLI(t, "trace", "fetch", "mooncake", "--dir", dir, "--mirror", srv.URL, "-q")
	require.Error(t, err)
	assert.Equal(t, exitRunFailed, exitCode(err))
	assert.Contains(t, err.Error(), "checksum mismatch")
	assert.Contains(t, err.Error(), srv.URL+"/kvcache-ai/Mooncake/3cca71daccf2a7afb8fe3f0295358f70e3a69fdb/FAST25-release/traces/synthetic_trace.jsonl")
	ents, err := os.ReadDir(filepath.Join(dir, "mooncake"))
	require.NoError(t, err)
	assert.Empty(t, ents, "no file left as if complete, no partial file")

	// --trace mooncake now says the trace is not fetched.
	t.Setenv(tracefetch.EnvDir, dir)
	_, _, err = runCLI(t, "run", "--trace", "mooncake", "--max-requests", "5", "--out", filepath.Join(t.TempDir(), "o"), "-q")
	require.Error(t, err)
	assert.Equal(t, exitBadInput, exitCode(err))
	assert.Contains(t, err.Error(), "pdemu trace fetch mooncake")
}

// An embedded scenario whose trace is absent (a fresh clone without
// ../shared) points to pdemu trace fetch.
func TestMissingSharedTracePointsToFetch(t *testing.T) {
	wd := t.TempDir() // no scenarios/../shared here
	old, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(wd))
	defer func() { require.NoError(t, os.Chdir(old)) }()
	_, _, err = runCLI(t, "run", "claude-code", "--max-requests", "5", "--out", filepath.Join(wd, "o"), "-q")
	require.Error(t, err)
	assert.Equal(t, exitBadInput, exitCode(err))
	assert.Contains(t, err.Error(), "pdemu trace fetch weka-claude-code")
}

// Fetched from a local mirror of the shared copy, the trace replays by
// its name, byte for byte the trace the docs use.
func TestTraceFetchThenRunByName(t *testing.T) {
	shared := tracesDir(t)
	tr, _ := tracefetch.Lookup("mooncake")
	body, err := os.ReadFile(filepath.Join(shared, "mooncake", tr.Main))
	require.NoError(t, err)
	var ranges []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ranges = append(ranges, r.Header.Get("Range"))
		if r.URL.Path != "/"+tr.Repo+"/"+tr.Commit+"/"+tr.Files[0].Path {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "", time.Time{}, strings.NewReader(string(body)))
	}))
	defer srv.Close()
	dir := t.TempDir()
	// A download interrupted halfway: the next fetch resumes it.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "mooncake"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mooncake", tr.Main+".part"), body[:len(body)/2], 0o644))
	_, stderr, err := runCLI(t, "trace", "fetch", "mooncake", "--dir", dir, "--mirror", srv.URL)
	require.NoError(t, err)
	assert.Contains(t, stderr, "resumed after")
	assert.Equal(t, []string{"bytes=" + strconv.Itoa(len(body)/2) + "-"}, ranges)
	require.NoError(t, tracefetch.Verify(dir, tr))

	t.Setenv(tracefetch.EnvDir, dir)
	out := filepath.Join(t.TempDir(), "o")
	_, _, err = runCLI(t, "run", "mooncake", "--trace", "mooncake", "--max-requests", "30", "--out", out, "-q")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	var sum struct {
		Trace struct{ Path string } `json:"trace"`
	}
	require.NoError(t, json.Unmarshal(b, &sum))
	assert.Equal(t, filepath.Join(dir, "mooncake", tr.Main), sum.Trace.Path)

	out2, _, err := runCLI(t, "trace", "fetch", "--dir", dir)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^mooncake +1\.1 MB +yes `, out2, "listed as cached")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mooncake", tr.Main), []byte("edited"), 0o644))
	out2, _, err = runCLI(t, "trace", "fetch", "--dir", dir)
	require.NoError(t, err)
	assert.Contains(t, out2, "CHANGED (fetch again)", "a file that is not the pinned one is not listed as cached")

	// Fetching again downloads the changed file only.
	_, _, err = runCLI(t, "trace", "fetch", "mooncake", "--dir", dir, "--mirror", srv.URL, "-q")
	require.NoError(t, err)
	require.NoError(t, tracefetch.Verify(dir, tr))

	// And then nothing.
	ranges = nil
	_, stderr, err = runCLI(t, "trace", "fetch", "mooncake", "--dir", dir, "--mirror", srv.URL)
	require.NoError(t, err)
	assert.Contains(t, stderr, "already in the cache, verified")
	assert.Empty(t, ranges)
}

// pdemu report marks a partial run, warns about it and refuses it as the
// baseline (exit 2); directories kept with summary.json only are enough.
func TestReportRefusesPartialBaseline(t *testing.T) {
	root := t.TempDir()
	for name, partial := range map[string]bool{"good": false, "cut": true} {
		dir := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		sum := `{"scenario": "s", "policy": "kvc", "seed": 1, "partial": ` + strconv.FormatBool(partial) + `, "stopped_by": "SIGINT",
  "requests": {"total": 10, "completed": 10, "failed": 0, "unfinished": 3}, "ttft_ms": {"p50": 5}, "e2e_ms": {"p50": 50}, "modes": {"Direct": 10}}`
		require.NoError(t, os.WriteFile(filepath.Join(dir, "summary.json"), []byte(sum), 0o644))
	}
	out := filepath.Join(root, "r", "report.html")
	_, _, err := runCLI(t, "report", filepath.Join(root, "cut"), filepath.Join(root, "good"), "--baseline", "cut", "--out", out)
	require.Error(t, err)
	assert.Equal(t, exitBadInput, exitCode(err))
	assert.Contains(t, err.Error(), `--baseline "cut" is a partial run (stopped by SIGINT with 3 requests unfinished)`)

	_, stderr, err := runCLI(t, "report", filepath.Join(root, "cut"), filepath.Join(root, "good"), "--out", out)
	require.NoError(t, err)
	assert.Contains(t, stderr, "run cut is partial")
	b, err := os.ReadFile(filepath.Join(root, "r", "compare.csv"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "\ncut,s,kvc,,1,,partial,10,")
	assert.Contains(t, string(b), "\ngood,s,kvc,,1,,ok,10,")
	page, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(page), "baseline: good (the first run with status ok")
}

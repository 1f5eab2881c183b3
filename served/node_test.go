package served

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/serve"
)

// nodeChecks are the checks testdata/node/conformance.mjs reports, each
// a row of docs/SERVE.md's conformance table: the script must report
// every one (a check that silently went missing is a failure).
var nodeChecks = []string{
	"models list and retrieve", "chat completion", "chat stream with usage", "chat stream without usage",
	"completions", "max_completion_tokens", "stop", "logprobs", "n > 1", "tools refused",
	"ranges and roles validated", "unknown model", "context length", "stream helper", "n > 1 streamed",
	"request ids", "unsupported endpoint", "abort by AbortController",
}

// Issue 21 row 9: conformance through the official OpenAI Node SDK
// (openai, pinned in testdata/node/package-lock.json), against a served
// run on loopback. Needs node (≥ 20) and `npm ci` in testdata/node
// (.ci/run does it); skipped with the reason otherwise.
func TestConformanceNodeSDK(t *testing.T) {
	node := nodeSDK(t)
	spec := loadScenario(t, scenarios.Default)
	base, stop := startServeSpec(t, spec, Options{TimeScale: 5})
	runNodeConformance(t, node, base, serve.CommonModel(spec))
	out, err := stop()
	require.NoError(t, err)
	// The abort was the emulated request's: it left the cluster, once.
	assert.Equal(t, 1, out.Summary.Requests.Aborted, "%+v", out.Summary.Requests)
	assert.Zero(t, out.Summary.Requests.Failed, "%+v", out.Summary.Requests)
}

// The same conformance script against the built binary, as a user runs
// it: `pdemu serve --listen 127.0.0.1:0` in its own process, the SDK on
// loopback, then SIGINT: the server drains, exits 0 and writes its
// outputs (one aborted request, none failed, per_request.csv with the
// client columns). Not under -short (it builds the binary).
func TestConformanceNodeSDKBinary(t *testing.T) {
	node := nodeSDK(t)
	if testing.Short() {
		t.Skip("-short: builds the pdemu binary")
	}
	bin := filepath.Join(t.TempDir(), "pdemu")
	b, err := exec.Command("go", "build", "-o", bin, "../cmd/pdemu").CombinedOutput()
	require.NoError(t, err, "%s", b)
	out := t.TempDir()
	srv := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--time-scale", "5", "--out", out, "--force")
	stderr, err := srv.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	exited := make(chan error, 1)
	var log bytes.Buffer
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if _, rest, ok := strings.Cut(line, " on http://"); ok && strings.Contains(line, "pdemu: serving") {
				urls <- "http://" + strings.Fields(rest)[0]
			}
		}
		exited <- srv.Wait()
	}()
	t.Cleanup(func() { _ = srv.Process.Kill() })
	var base string
	select {
	case base = <-urls:
	case err := <-exited:
		t.Fatalf("pdemu serve exited before listening: %v\n%s", err, log.String())
	case <-time.After(time.Minute):
		t.Fatal("pdemu serve did not listen within a minute")
	}
	base = strings.TrimSuffix(base, "/v1")
	// The model the server advertises (--model, "pdemu" by default), as a
	// client finds it.
	res, err := http.Get(base + "/v1/models")
	require.NoError(t, err)
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&models))
	res.Body.Close()
	require.NotEmpty(t, models.Data)
	runNodeConformance(t, node, base, models.Data[0].ID)
	require.NoError(t, srv.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		require.NoError(t, err, "pdemu serve's exit after SIGINT (a drain is a normal stop)")
	case <-time.After(time.Minute):
		t.Fatal("pdemu serve did not drain within a minute")
	}
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	var sum struct {
		Requests struct{ Total, Aborted, Failed int } `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(raw, &sum))
	assert.Equal(t, 1, sum.Requests.Aborted, "the AbortController's request: %+v", sum.Requests)
	assert.Zero(t, sum.Requests.Failed, "%+v", sum.Requests)
	assert.Positive(t, sum.Requests.Total)
	col, rows := testkit.ReadCSV(t, filepath.Join(out, "per_request.csv"))
	assert.Len(t, rows, sum.Requests.Total)
	assert.Contains(t, col, "client_ttft_ms")
}

// nodeSDK returns node's path, or skips the test saying what is missing.
func nodeSDK(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the OpenAI Node SDK conformance needs Node.js 20+")
	}
	if _, err := os.Stat(filepath.Join("testdata", "node", "node_modules", "openai", "package.json")); err != nil {
		t.Skip("the OpenAI Node SDK is not installed: run `npm ci` in served/testdata/node (.ci/run does)")
	}
	return node
}

// runNodeConformance runs testdata/node/conformance.mjs against the
// server at base (serving model): each check it reports is a subtest,
// and it must report every one of nodeChecks.
func runNodeConformance(t *testing.T, node, base, model string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "conformance.mjs")
	cmd.Dir = filepath.Join("testdata", "node")
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+base+"/v1", "PDEMU_MODEL="+model)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		t.Fatalf("node: %v\n%s", runErr, stderr.String())
	}
	got := map[string]bool{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var r struct {
			Name   string `json:"name"`
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "a line of the script: %s", sc.Text())
		got[r.Name] = true
		t.Run(r.Name, func(t *testing.T) {
			if !r.OK {
				t.Fatal(r.Detail)
			}
			t.Log(r.Detail)
		})
	}
	for _, name := range nodeChecks {
		assert.True(t, got[name], "the script did not report %q", name)
	}
	assert.NoError(t, runErr, "node's exit: %s", stderr.String())
}

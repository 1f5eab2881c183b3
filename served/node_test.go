package served

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the OpenAI Node SDK conformance needs Node.js 20+")
	}
	dir := filepath.Join("testdata", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		t.Skip("the OpenAI Node SDK is not installed: run `npm ci` in served/testdata/node (.ci/run does)")
	}
	spec := loadScenario(t, scenarios.Default)
	base, stop := startServeSpec(t, spec, Options{TimeScale: 5})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "conformance.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+base+"/v1", "PDEMU_MODEL="+serve.CommonModel(spec))
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
	out, err := stop()
	require.NoError(t, err)
	// The abort was the emulated request's: it left the cluster, once.
	assert.Equal(t, 1, out.Summary.Requests.Aborted, "%+v", out.Summary.Requests)
	assert.Zero(t, out.Summary.Requests.Failed, "%+v", out.Summary.Requests)
}

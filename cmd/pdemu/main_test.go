package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exitCode maps run's error to the process exit code main would use.
func exitCode(err error) int { return exitCodeOf(err) }

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestRunDefaultScenarioWritesOutputs(t *testing.T) {
	dir := t.TempDir()
	stdout, _, err := runCLI(t, "run", "--out", dir, "--var", "sessions=4", "--max-requests", "30")
	require.NoError(t, err)
	assert.Contains(t, stdout, "seed 42")
	assert.Contains(t, stdout, "requests  total 30  completed 30  failed 0")
	for _, f := range []string{"per_request.csv", "instances.csv", "summary.json"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		assert.Positive(t, st.Size(), f)
	}
}

func TestFlagsAfterFile(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runCLI(t, "run", "vanilla-pd-1p3d.hcl", "--out", dir, "--max-requests", "10", "-q")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"policy": "vanilla"`)
}

func TestMalformedHCLExits2WithFileLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	require.NoError(t, os.WriteFile(bad, []byte(`
prefill "p0" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}
decode "d0" {
  gpu = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
  kv_budget_tokens = -5
}
link "p0" "d9" {
  transport = "rdma"
  device = "mlx5_0"
  bandwidth = "200Gbps"
}
router "kvc" {
  tau_rejekt = 3
}
`), 0o644))
	for _, cmd := range []string{"validate", "run"} {
		_, _, err := runCLI(t, cmd, bad)
		require.Error(t, err, cmd)
		assert.Equal(t, 2, exitCode(err), cmd)
		msg := err.Error()
		assert.Contains(t, msg, "bad.hcl:9", cmd)  // kv_budget_tokens
		assert.Contains(t, msg, "bad.hcl:11", cmd) // unknown endpoint d9
		assert.Contains(t, msg, "bad.hcl:17", cmd) // misspelt tau_reject
		assert.Contains(t, msg, "Did you mean", cmd)
	}
}

func TestValidateEmbeddedScenario(t *testing.T) {
	stdout, _, err := runCLI(t, "validate", "1p3d-tcp.hcl")
	require.NoError(t, err)
	assert.Contains(t, stdout, "ok")
}

func TestModels(t *testing.T) {
	stdout, _, err := runCLI(t, "models")
	require.NoError(t, err)
	assert.Contains(t, stdout, "qwen3-coder-30b-a3b")
}

// tracesDir finds ../shared/traces from the repository (or PDEMU_TRACES).
func tracesDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("PDEMU_TRACES"); d != "" {
		return d
	}
	d, err := filepath.Abs("../../../shared/traces")
	require.NoError(t, err)
	if _, err := os.Stat(d); err != nil {
		t.Skipf("shipped traces not found at %s (set PDEMU_TRACES): %v", d, err)
	}
	return d
}

// TestReplayShippedTraces runs every loader on its shipped trace end to
// end through pdemu run (capped, to stay fast) and checks nothing is lost.
func TestReplayShippedTraces(t *testing.T) {
	dir := tracesDir(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"mooncake scenario", []string{"mooncake.hcl", "--trace", filepath.Join(dir, "mooncake/synthetic_trace.jsonl")}, "total 300  completed 300  failed 0"},
		{"claude-code scenario", []string{"claude-code.hcl", "--trace", filepath.Join(dir, "weka-claude-code")}, "total 300  completed 300  failed 0"},
		{"azure on the default cluster", []string{"--trace", filepath.Join(dir, "azure-2023/AzureLLMInferenceTrace_code.csv")}, "total 300  completed 300  failed 0"},
		{"tracelab on the default cluster", []string{"--trace", filepath.Join(dir, "tracelab/round_trace.sanitized.jsonl")}, "total 19  completed 19  failed 0"},
		// Prompts above the default K_d are counted before the run, which
		// does not start (exit 2: more than --max-failed cannot be served).
		{"claude-code on the default cluster", []string{"--trace", filepath.Join(dir, "weka-claude-code")}, ""},
		// With --max-failed 1 it runs, and they fail with their reason.
		{"claude-code on the default cluster, run anyway", []string{"--trace", filepath.Join(dir, "weka-claude-code"), "--max-failed", "1"}, "total 300"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"run"}, c.args...)
			stdout, stderr, err := runCLI(t, append(args, "--max-requests", "300", "--out", out)...)
			if c.want == "" {
				require.Error(t, err)
				assert.Equal(t, 2, exitCodeOf(err))
				assert.Contains(t, err.Error(), "cannot be served by this cluster")
				assert.Contains(t, err.Error(), "--set 'decode.*.kv_budget_tokens=0'")
				return
			}
			require.NoError(t, err)
			if strings.Contains(c.name, "anyway") {
				assert.Contains(t, stderr, "requests failed")
			}
			assert.Contains(t, stdout, c.want)
			b, err := os.ReadFile(filepath.Join(out, "summary.json"))
			require.NoError(t, err)
			assert.Contains(t, string(b), `"dead_letters": 0`)
		})
	}
}

func TestTraceStatsAndGen(t *testing.T) {
	dir := t.TempDir()
	gen := filepath.Join(dir, "swe.jsonl")
	_, _, err := runCLI(t, "trace", "gen", "--kind", "swebench", "--seed", "3", "--out", gen)
	require.NoError(t, err)
	stdout, _, err := runCLI(t, "trace", "stats", gen)
	require.NoError(t, err)
	assert.Contains(t, stdout, "requests        4449")
	assert.Contains(t, stdout, "sessions        52")

	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n{\"timestamp\": 1, \"input_length\": \"x\"}\n"), 0o644))
	_, _, err = runCLI(t, "trace", "stats", bad)
	assert.Equal(t, 2, exitCode(err))
	assert.Contains(t, err.Error(), "bad.jsonl:2")
	_, _, err = runCLI(t, "run", "--trace", bad, "--out", filepath.Join(dir, "o"), "-q")
	assert.Equal(t, 2, exitCode(err), "%v", err)
	assert.Contains(t, err.Error(), "bad.jsonl:2")
	stdout, _, err = runCLI(t, "run", "--trace", bad, "--skip-bad", "--out", filepath.Join(dir, "o2"))
	require.NoError(t, err)
	assert.Contains(t, stdout, "total 1  completed 1")
	b, err := os.ReadFile(filepath.Join(dir, "o2", "summary.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"skipped_bad_records": 1`)
}

// A run never overwrites or mixes with another run's outputs unless
// --force says so; the refusal comes before any emulation (exit 2).
func TestRunRefusesAnotherRunsDirectory(t *testing.T) {
	dir := t.TempDir()
	args := []string{"run", "--out", dir, "--var", "sessions=2", "--max-requests", "6", "-q"}
	_, _, err := runCLI(t, args...)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
	_, _, err = runCLI(t, args...)
	require.Error(t, err)
	assert.Equal(t, 2, exitCodeOf(err))
	assert.Contains(t, err.Error(), "--force")
	_, _, err = runCLI(t, append(args, "--force")...)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b), "--force keeps files pdemu did not write")
}

// A request no decode pool could ever hold fails at once at the router,
// before any prefill, and the request behind it is not held up (it used to
// wait 89 emulated hours behind a 16.7M-token prefill on P).
func TestOversizedRequestFailsBeforePrefill(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "huge.jsonl")
	huge := make([]string, 16_700_000/512)
	for i := range huge {
		huge[i] = strconv.Itoa(i)
	}
	lines := `{"timestamp":0,"input_length":16700000,"output_length":10,"hash_ids":[` + strings.Join(huge, ",") + "]}\n" +
		`{"timestamp":1,"input_length":1000,"output_length":10,"hash_ids":[999999,999998]}` + "\n"
	require.NoError(t, os.WriteFile(trace, []byte(lines), 0o644))
	out := t.TempDir()
	// A context long enough that the pool, not max_model_len, refuses it.
	_, _, err := runCLI(t, "run", "--trace", trace, "--out", out, "-q", "--max-failed", "1", "--set", "*.*.max_model_len=16777216")
	require.NoError(t, err)
	rows, col := readPerRequest(t, out, "reason", "p_worker", "ttft_ms")
	require.Len(t, rows, 2)
	assert.Equal(t, "exceeds-kv-pool", rows[0][col["reason"]])
	assert.Empty(t, rows[0][col["p_worker"]], "never sent to a prefill worker")
	ttft, err := strconv.ParseFloat(rows[1][col["ttft_ms"]], 64)
	require.NoError(t, err)
	assert.Less(t, ttft, 1000.0, "the small request is not held up")
}

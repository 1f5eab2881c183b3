package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
)

// validateStdin runs "pdemu validate - args..." with src on stdin.
func validateStdin(t *testing.T, src string, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRoot(&out, &errb)
	root.SetIn(strings.NewReader(src))
	root.SetArgs(append([]string{"validate", "-"}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// pdemu scenarios show NAME | pdemu validate - passes for every embedded
// scenario, and so does the output saved as a file of one's own (the
// documented way to start a scenario): extends and trace paths resolve
// as in the embedded scenario. Scenarios that replay a shipped trace
// are skipped without ../shared.
func TestScenariosShowValidates(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	root := filepath.Join(wd, "..", "..")
	_, statErr := os.Stat(filepath.Join(root, "..", "shared", "traces"))
	t.Chdir(root) // the repository root, where ../shared/traces sits
	for _, n := range scenarios.Names() {
		name := strings.TrimSuffix(n, ".hcl")
		t.Run(name, func(t *testing.T) {
			shown, _, err := runCLI(t, "scenarios", "show", name)
			require.NoError(t, err)
			if strings.Contains(shown, "shared/traces") && statErr != nil {
				t.Skipf("%s replays a shipped trace, not found: %v", name, statErr)
			}
			out, err := validateStdin(t, shown)
			if err != nil && statErr != nil && errors.Is(err, fs.ErrNotExist) {
				// Its trace is inherited (extends), so not in the text shown.
				t.Skipf("%s replays a shipped trace, not found: %v", name, err)
			}
			require.NoError(t, err, "%s via stdin", name)
			assert.Contains(t, out, "-: ok")
			file := filepath.Join(t.TempDir(), "my.hcl")
			require.NoError(t, os.WriteFile(file, []byte(shown), 0o644))
			if strings.Contains(shown, "shared/traces") {
				return // its trace resolves from the working directory, not from a temp file's
			}
			_, _, err = runCLI(t, "validate", file)
			require.NoError(t, err, "%s saved as a file", name)
		})
	}
}

// validate reads the workload as a run would: a missing trace fails, and
// --trace checks a trace against the cluster.
func TestValidateChecksTheWorkload(t *testing.T) {
	src := "extends = \"<embedded>/1p3d-mlx5.hcl\"\nworkload {\n  trace = \"/nonexistent/t.jsonl\"\n}\n"
	_, err := validateStdin(t, src)
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	assert.Contains(t, err.Error(), "/nonexistent/t.jsonl")

	trace := writeTrace(t, 1000, 100_000, 300_000, 2000)
	_, _, err = runCLI(t, "validate", "1p3d-mlx5", "--trace", trace)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2 of 4 requests (50.0%) cannot be served")
	stdout, _, err := runCLI(t, "validate", "1p3d-mlx5", "--trace", trace, "--set", "*.*.max_model_len=524288", "--set", "decode.*.kv_budget_tokens=0", "--json")
	require.NoError(t, err)
	assert.Contains(t, stdout, `"over_context": 0`)
	assert.Contains(t, stdout, `"requests": 4`)
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// useLines is every command's expected usage line: a new command must be
// added here (and so get its help checked).
var useLines = map[string]string{
	"pdemu":                       "pdemu [flags]",
	"pdemu run":                   "pdemu run [SCENARIO] [flags]",
	"pdemu compare":               "pdemu compare SCENARIO... --out DIR [flags]",
	"pdemu serve":                 "pdemu serve [SCENARIO] [flags]",
	"pdemu report":                "pdemu report RUN_DIR... [--out FILE] [flags]",
	"pdemu experiment":            "pdemu experiment [flags]",
	"pdemu experiment kvc-paper":  "pdemu experiment kvc-paper [flags]",
	"pdemu validate":              "pdemu validate SCENARIO [flags]",
	"pdemu models":                "pdemu models [flags]",
	"pdemu scenarios":             "pdemu scenarios [flags]",
	"pdemu scenarios show":        "pdemu scenarios show NAME [flags]",
	"pdemu trace":                 "pdemu trace [flags]",
	"pdemu trace stats":           "pdemu trace stats PATH [flags]",
	"pdemu trace gen":             "pdemu trace gen [flags]",
	"pdemu trace fetch":           "pdemu trace fetch [NAME...|all] [--dir DIR] [flags]",
	"pdemu version":               "pdemu version [flags]",
	"pdemu gpus":                  "pdemu gpus [flags]",
	"pdemu show":                  "pdemu show SCENARIO [flags]",
	"pdemu capacity":              "pdemu capacity SCENARIO... --out DIR [flags]",
	"pdemu completion":            "pdemu completion [command]",
	"pdemu completion bash":       "pdemu completion bash",
	"pdemu completion zsh":        "pdemu completion zsh [flags]",
	"pdemu completion fish":       "pdemu completion fish [flags]",
	"pdemu completion powershell": "pdemu completion powershell [flags]",
}

func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, s := range c.Commands() {
		if s.Name() == "help" {
			continue // cobra's own
		}
		out = append(out, allCommands(s)...)
	}
	return out
}

func TestHelpOfEveryCommand(t *testing.T) {
	cmds := allCommands(newRoot(os.Stdout, os.Stderr))
	require.Len(t, cmds, len(useLines), "every command has an expected usage line")
	for _, c := range cmds {
		path := c.CommandPath()
		t.Run(path, func(t *testing.T) {
			want, ok := useLines[path]
			require.True(t, ok, "no expected usage line for %q", path)
			args := append(strings.Fields(path)[1:], "-h")
			stdout, _, err := runCLI(t, args...)
			require.NoError(t, err)
			assert.Contains(t, stdout, "Usage:\n  "+want, "usage names the positional arguments")
			i := strings.Index(stdout, "Examples:\n")
			require.GreaterOrEqual(t, i, 0, "help has examples")
			ex := strings.SplitN(stdout[i+len("Examples:\n"):], "\n\n", 2)[0]
			var n int
			for _, line := range strings.Split(ex, "\n") {
				line = strings.TrimSpace(line)
				if line == "" {
					continue
				}
				n++
				assert.True(t, strings.HasPrefix(line, "pdemu ") || strings.HasPrefix(line, "source <(pdemu "),
					"example %q runs pdemu", line)
			}
			assert.Positive(t, n)
			if c.HasAvailableFlags() {
				assert.Contains(t, stdout, "-h, --help")
			}
			if c.Runnable() && c.Name() != "completion" {
				// Flags are shown as --flags.
				c.Flags().VisitAll(func(f *pflag.Flag) {
					assert.Contains(t, stdout, "--"+f.Name, "flag %s in the help", f.Name)
				})
			}
		})
	}
	// The commands that run emulations document the exit codes.
	for _, path := range []string{"run", "compare", "experiment kvc-paper"} {
		stdout, _, err := runCLI(t, append(strings.Fields(path), "-h")...)
		require.NoError(t, err)
		assert.Contains(t, stdout, "Exit codes:")
	}
	stdout, _, err := runCLI(t, "run", "-h")
	require.NoError(t, err)
	for _, code := range []string{"0 ", "1 ", "2 ", "3 ", "130", "143"} {
		assert.Contains(t, stdout, "\n  "+code, "run -h documents exit code %s", code)
	}
}

func TestMisspellingsGetSuggestions(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"rnu"}, `Did you mean "run"?`},
		{[]string{"compaer"}, `Did you mean "compare"?`},
		{[]string{"trace", "stast"}, `Did you mean "stats"?`},
		{[]string{"scenarios", "shwo"}, `Did you mean "show"?`},
		{[]string{"run", "--outt", "x"}, "Did you mean --out?"},
		{[]string{"compare", "dp4", "--seedz", "2"}, "Did you mean --seeds?"},
		{[]string{"trace", "gen", "--knd", "swebench"}, "Did you mean --kind?"},
		{[]string{"run", "1p3d-mlx6"}, `Did you mean "1p3d-mlx5"?`},
		{[]string{"validate", "vanila-pd-1p3d"}, `Did you mean "vanilla-pd-1p3d"?`},
		{[]string{"compare", "dp5", "--out", "x"}, `Did you mean "dp4"?`},
		{[]string{"scenarios", "show", "claude-cod"}, `Did you mean "claude-code"?`},
		{[]string{"models", "--gpu", "H200-SXN"}, `Did you mean "H200-SXM"?`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, _, err := runCLI(t, c.args...)
			require.Error(t, err)
			assert.Equal(t, 2, exitCode(err), "%v", err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// Bad command lines exit 2 (bad input), not 1 (a runtime failure): one
// table for all of them.
func TestBadInputExits2(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--clock", "sundial"},
		{"run", "--time-scale", "-1"},
		{"run", "--max-requests", "-3"},
		{"run", "no-such-file.hcl"},
		{"frobnicate"},
		{"validate"},
		// Bad flag values found in review (qa): refused as bad input, not
		// as a runtime failure.
		{"models", "--mem-fraction", "2"},
		{"models", "--mem-fraction", "0"},
		{"models", "--mem-fraction", "NaN"},
		// 1p3d-mlx5 has 4 workers: a range of 2 ports cannot hold them
		// (was exit 1, "the port range is used up", after binding some).
		{"serve", "--endpoints", "workers", "--listen", "127.0.0.1:0", "--worker-ports", "9000-9001"},
		{"serve", "--endpoints", "workers", "--listen", "127.0.0.1:0", "--kv-events-ports", "9000-9002"},
		// A load axis the scenario's workload does not have, refused
		// before round 1 (was: every run of round 1 refused its --set).
		{"capacity", "1p3d-mlx5", "--load", "max_concurrent", "--out", "/nonexistent/cap"},
		{"capacity", "1p3d-mlx5", "--load", "session_rate", "--out", "/nonexistent/cap"},
		{},
		{"trace"},
		{"models", "extra"},
		{"version", "extra"},
		{"run", "a.hcl", "b.hcl"},
		{"run", "--log-level", "loud"},
		{"run", "--var", "novalue"},
		{"run", "--set", "router.tau_append=1,2"},
		{"run", "--format", "mooncake"},
		{"run", "--wall-timeout", "0s"},
		{"compare"},
		{"compare", "dp4", "--seeds", "0"},
		{"compare", "dp4", "--jobs", "0"},
		{"compare", "dp4", "--set", "router.tau_append"},
		{"compare", "dp4", "--router", "kvc,,vanilla"},
		{"compare", "dp4", "--trace", "a,"},
		{"report"},
		{"report", "/nonexistent-dir"},
		{"scenarios", "show"},
		{"trace", "stats"},
		{"trace", "gen", "--kind", "nope"},
	} {
		_, _, err := runCLI(t, args...)
		assert.Equal(t, 2, exitCode(err), "%v: %v", args, err)
	}
}

// The positional-argument checks name the command and what it takes
// (atLeastOne, atMostOne) and exit 2.
func TestPositionalArgsErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"run", "a.hcl", "b.hcl"}, "run takes at most one SCENARIO, got 2: a.hcl b.hcl"},
		{[]string{"serve", "a.hcl", "b.hcl"}, "serve takes at most one SCENARIO, got 2: a.hcl b.hcl"},
		{[]string{"compare"}, "compare needs at least one SCENARIO (see 'pdemu scenarios')"},
		{[]string{"capacity"}, "capacity needs at least one SCENARIO (see 'pdemu scenarios')"},
		{[]string{"report"}, "report needs at least one RUN_DIR"},
	} {
		_, _, err := runCLI(t, c.args...)
		assert.Equal(t, 2, exitCode(err), "%v: %v", c.args, err)
		assert.ErrorContains(t, err, c.msg, "%v", c.args)
	}
}

// captureSpec replaces sourceOf to record the spec a command would run,
// then stops it with a sentinel error.
var errCaptured = errors.New("captured")

func captureSpec(t *testing.T) **topology.Spec {
	t.Helper()
	var got *topology.Spec
	old := sourceOf
	sourceOf = func(s *topology.Spec, skipBad bool) (workload.Source, error) {
		got = s
		return nil, errCaptured
	}
	t.Cleanup(func() { sourceOf = old })
	return &got
}

// --trace keeps the scenario's replay options (issue 12: it used to drop
// max_concurrent and share_prefix) and detects the trace's format.
func TestTraceKeepsReplayOptions(t *testing.T) {
	got := captureSpec(t)
	_, _, err := runCLI(t, "run", "claude-code", "--trace", "/elsewhere/sessions", "--var", "max_concurrent=5")
	require.ErrorIs(t, err, errCaptured)
	s := *got
	require.NotNil(t, s)
	assert.Equal(t, "/elsewhere/sessions", s.Workload.Trace)
	assert.Equal(t, "", s.Workload.Format, "the scenario's format described its own trace: detect")
	assert.Equal(t, 5, s.Workload.Replay.MaxConcurrent)
	assert.True(t, s.Workload.Replay.SharePrefix)
	assert.Equal(t, "closed", s.Workload.Loop)

	_, _, err = runCLI(t, "run", "mooncake", "--trace", "/x.jsonl", "--format", "mooncake", "--seed", "9", "--max-requests", "7")
	require.ErrorIs(t, err, errCaptured)
	s = *got
	assert.Equal(t, "mooncake", s.Workload.Format)
	assert.True(t, s.Workload.Replay.InferSessions)
	assert.Equal(t, uint64(9), s.Workload.Seed)
	assert.Equal(t, 7, s.Workload.MaxRequests)

	// Without --trace nothing changes.
	_, _, err = runCLI(t, "run", "claude-code")
	require.ErrorIs(t, err, errCaptured)
	assert.Equal(t, "claude-code", (*got).Workload.Format)

	// compare applies the same overrides to every run.
	_, _, err = runCLI(t, "compare", "claude-code", "--trace", "/elsewhere/sessions", "--out", t.TempDir(), "-q")
	require.ErrorIs(t, err, errCaptured)
	assert.Equal(t, "/elsewhere/sessions", (*got).Workload.Trace)
	assert.True(t, (*got).Workload.Replay.SharePrefix)
}

func TestSingleDashLongFlagsStillWork(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runCLI(t, "run", "-out", dir, "-max-requests", "10", "-var", "sessions=2", "-q")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
}

func TestVersion(t *testing.T) {
	stdout, _, err := runCLI(t, "version")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(stdout, "pdemu "), stdout)
	assert.Contains(t, stdout, "revision")
}

func TestScenariosListAndShow(t *testing.T) {
	stdout, _, err := runCLI(t, "scenarios")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n") // not TrimSpace: the first line may start with the unmarked "  "
	require.Len(t, lines, len(scenarios.Names())+1)
	for i, n := range scenarios.Names() {
		f := strings.Fields(lines[i][1:])
		assert.Equal(t, strings.TrimSuffix(n, ".hcl"), f[0])
		assert.Greater(t, len(f), 2, "%s has a description", n)
	}
	assert.Contains(t, stdout, "* 1p3d-mlx5")
	assert.Contains(t, stdout, "the default pdemu scenario.")

	stdout, _, err = runCLI(t, "scenarios", "show", "dp4")
	require.NoError(t, err)
	want, err := scenarios.Read("dp4.hcl")
	require.NoError(t, err)
	assert.Equal(t, string(want), stdout)
}

func TestDescribe(t *testing.T) {
	for src, want := range map[string]string{
		"# a.hcl -- short one.\n#\n# more\n":                  "short one.",
		"# a.hcl -- spans\n# two lines. And more.\n\nx = 1\n": "spans two lines.",
		"x = 1\n": "",
		"# " + strings.Repeat("word ", 40) + "\n": strings.TrimSpace(strings.Repeat("word ", 20)) + " …",
	} {
		assert.Equal(t, want, describe([]byte(src)), src)
	}
}

func TestValidateJSON(t *testing.T) {
	stdout, _, err := runCLI(t, "validate", "1p3d-tcp", "--json")
	require.NoError(t, err)
	var v validateJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &v))
	assert.True(t, v.OK)
	assert.Equal(t, 1, v.Prefill)
	assert.Equal(t, 3, v.Decode)
	assert.Equal(t, "kvc", v.Router)

	bad := filepath.Join(t.TempDir(), "bad.hcl")
	require.NoError(t, os.WriteFile(bad, []byte("router \"kvc\" {\n  tau_rejekt = 3\n}\n"), 0o644))
	stdout, _, err = runCLI(t, "validate", bad, "--json")
	assert.Equal(t, 2, exitCode(err))
	v = validateJSON{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &v))
	assert.False(t, v.OK)
	require.NotEmpty(t, v.Diagnostics)
	found := false
	for _, d := range v.Diagnostics {
		if d.Line == 2 && d.File == bad {
			found = true
			assert.Equal(t, "error", d.Severity)
		}
	}
	assert.True(t, found, "%+v", v.Diagnostics)
}

func TestTraceStatsJSON(t *testing.T) {
	gen := filepath.Join(t.TempDir(), "swe.jsonl")
	_, _, err := runCLI(t, "trace", "gen", "--kind", "swebench", "--seed", "3", "--out", gen)
	require.NoError(t, err)
	stdout, _, err := runCLI(t, "trace", "stats", gen, "--json")
	require.NoError(t, err)
	var st statsJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &st))
	assert.Equal(t, 4449, st.Requests)
	assert.Equal(t, 52, st.Sessions)
	assert.Positive(t, st.Input.Mean)
	assert.Positive(t, st.DurationS)
}

// trace gen writes the compact form unless --full; both read back to the
// same statistics.
func TestTraceGenForms(t *testing.T) {
	dir := t.TempDir()
	compact, full := filepath.Join(dir, "swe.jsonl"), filepath.Join(dir, "swe-full.jsonl")
	_, _, err := runCLI(t, "trace", "gen", "--kind", "swebench", "--requests", "500", "--out", compact)
	require.NoError(t, err)
	_, _, err = runCLI(t, "trace", "gen", "--kind", "swebench", "--requests", "500", "--full", "--out", full)
	require.NoError(t, err)
	c, err := os.ReadFile(compact)
	require.NoError(t, err)
	f, err := os.ReadFile(full)
	require.NoError(t, err)
	assert.Contains(t, string(c), `"new_hash_ids":[`)
	assert.NotContains(t, string(c), `"hash_ids":[`)
	assert.NotContains(t, string(f), `"new_hash_ids"`)
	assert.Less(t, len(c)*5, len(f), "compact %d bytes, full %d", len(c), len(f))
	sc, _, err := runCLI(t, "trace", "stats", compact, "--json")
	require.NoError(t, err)
	sf, _, err := runCLI(t, "trace", "stats", full, "--json")
	require.NoError(t, err)
	assert.Equal(t, sf, sc)
}

// A compare run is byte-identical to the same run alone, and --json
// prints compare.json's rows.
func TestCompareCLI(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, err := runCLI(t, "compare", "1p3d-mlx5", "vanilla-pd-1p3d", "--seeds", "2", "--var", "sessions=4",
		"--max-requests", "30", "--jobs", "2", "--out", out, "--json")
	require.NoError(t, err)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows))
	require.Len(t, rows, 4)
	assert.Equal(t, "1p3d-mlx5__seed=1", rows[0]["run"])
	assert.Equal(t, "vanilla-pd-1p3d__seed=2", rows[3]["run"])
	assert.Contains(t, stderr, "run 4/4", "plain progress lines when stderr is not a terminal")
	for _, f := range []string{"compare.csv", "compare.json", "report.html", "plots/ttft_cdf.svg", "runs/dp4", "runs/1p3d-mlx5__seed=2/params.json"} {
		_, err := os.Stat(filepath.Join(out, f))
		if f == "runs/dp4" {
			assert.Error(t, err)
			continue
		}
		assert.NoError(t, err, f)
	}

	alone := t.TempDir()
	_, _, err = runCLI(t, "run", "vanilla-pd-1p3d", "--seed", "2", "--var", "sessions=4", "--max-requests", "30", "--out", alone, "-q")
	require.NoError(t, err)
	for _, f := range []string{"per_request.csv", "instances.csv", "summary.json"} {
		a, err := os.ReadFile(filepath.Join(alone, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(out, "runs", "vanilla-pd-1p3d__seed=2", f))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(a, b), "%s: compare's run differs from the run alone", f)
	}

	// pdemu report rebuilds the report from the run directories.
	rep := filepath.Join(t.TempDir(), "r.html")
	stdout, _, err = runCLI(t, "report", out, filepath.Join(alone), "--out", rep)
	require.NoError(t, err)
	assert.Contains(t, stdout, "report of 5 runs")
	b, err := os.ReadFile(rep)
	require.NoError(t, err)
	assert.Contains(t, string(b), "vanilla-pd-1p3d__seed=2")
	for _, f := range []string{"compare.csv", "compare.json", "plots/mode_mix.svg"} {
		_, err := os.Stat(filepath.Join(filepath.Dir(rep), f))
		assert.NoError(t, err, f)
	}
}

// --set and --router reach topology (implemented by another change: this
// test skips while topology answers "not implemented yet").
func TestCompareSetAndRouterEndToEnd(t *testing.T) {
	out := t.TempDir()
	stdout, _, err := runCLI(t, "compare", "1p3d-mlx5", "sticky-1p3d", "--set", "decode.*.kv_budget_tokens=60000,80000",
		"--seeds", "2", "--var", "sessions=4", "--max-requests", "30", "--out", out, "--json", "-q")
	if err != nil && strings.Contains(err.Error(), "not implemented yet") {
		t.Skip("topology --set not implemented yet: ", err)
	}
	require.NoError(t, err)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows))
	require.Len(t, rows, 8)
	assert.Equal(t, "1p3d-mlx5__decode._.kv_budget_tokens=60000__seed=1", rows[0]["run"])

	out = t.TempDir()
	stdout, _, err = runCLI(t, "compare", "1p3d-mlx5", "--router", "kvc,vanilla", "--var", "sessions=4", "--max-requests", "20", "--out", out, "--json", "-q")
	require.NoError(t, err)
	rows = nil
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows))
	require.Len(t, rows, 2)
	assert.Equal(t, "1p3d-mlx5__router=vanilla", rows[1]["run"])
	assert.Equal(t, "vanilla", rows[1]["policy"])

	dir := t.TempDir()
	_, _, err = runCLI(t, "run", "--router", "vanilla", "--var", "sessions=4", "--max-requests", "20", "--out", dir, "-q")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"policy": "vanilla"`)
}

func TestQuietIsSilentOnStderr(t *testing.T) {
	_, stderr, err := runCLI(t, "compare", "vanilla-pd-1p3d", "--var", "sessions=2", "--max-requests", "10", "--out", t.TempDir(), "-q")
	require.NoError(t, err)
	assert.Empty(t, stderr)
	_, stderr, err = runCLI(t, "run", "--var", "sessions=2", "--max-requests", "10", "--out", t.TempDir(), "-q")
	require.NoError(t, err)
	assert.Empty(t, stderr)
}

func TestProgressPlainLines(t *testing.T) {
	var b bytes.Buffer
	old := plainInterval
	plainInterval = time.Hour // render by hand below, not from the ticker
	defer func() { plainInterval = old }()
	p := newProgress(&b, false, 200, "requests")
	p.requestCallback()(actors.Progress{Ended: 50, Emulated: 12500 * time.Millisecond})
	p.render()
	p.finish()
	assert.Contains(t, b.String(), "pdemu: 50/200 requests, emulated 12.5 s")
	assert.Nil(t, newProgress(&b, true, 0, "requests"), "-q: no progress")
	var none *progress
	assert.Nil(t, none.requestCallback())
	none.finish()
}

func TestNormalizeArgs(t *testing.T) {
	root := newRoot(os.Stdout, os.Stderr)
	assert.Equal(t,
		[]string{"run", "--out", "d", "--var=k=v", "-q", "--time-scale", "-1", "--", "-out"},
		normalizeArgs(root, []string{"run", "-out", "d", "-var=k=v", "-q", "--time-scale", "-1", "--", "-out"}))
}

// TestRunProfiles: --cpuprofile and --memprofile write pprof files of the
// run (gzip-compressed protobuf, as go tool pprof reads them); a profile
// path that cannot be created is bad input (exit 2).
func TestRunProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "run.cpu"), filepath.Join(dir, "run.mem")
	_, _, err := runCLI(t, "run", "--var", "sessions=2", "--max-requests", "10", "--out", filepath.Join(dir, "out"), "-q",
		"--cpuprofile", cpu, "--memprofile", mem)
	require.NoError(t, err)
	for _, f := range []string{cpu, mem} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.True(t, len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b, "%s is not a gzip'd pprof profile", f)
	}
	_, _, err = runCLI(t, "run", "--var", "sessions=2", "--max-requests", "10", "--out", filepath.Join(dir, "out2"), "-q",
		"--cpuprofile", filepath.Join(dir, "missing", "run.cpu"))
	require.Equal(t, 2, exitCode(err))
}

// TestHeapProfileWanted: main keeps the runtime's heap-profile sampling
// only for a process that may write a heap profile.
func TestHeapProfileWanted(t *testing.T) {
	for _, c := range []struct {
		args    []string
		godebug string
		want    bool
	}{
		{[]string{"run", "dp4"}, "", false},
		{[]string{"run", "--memprofile", "m.out"}, "", true},
		{[]string{"run", "--memprofile=m.out"}, "", true},
		{[]string{"run", "-memprofile", "m.out"}, "", true},
		{[]string{"run", "--cpuprofile", "c.out"}, "", false},
		{[]string{"run", "--", "--memprofile"}, "", false},
		{[]string{"serve"}, "gctrace=1,memprofilerate=1", true},
		{nil, "gctrace=1", false},
	} {
		assert.Equal(t, c.want, heapProfileWanted(c.args, c.godebug), "%q GODEBUG=%q", c.args, c.godebug)
	}
}

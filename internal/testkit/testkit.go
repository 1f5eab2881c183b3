// Package testkit holds the test setup that several packages' tests
// repeat: parsing an embedded scenario, and running one in virtual time.
// It is for _test.go files only (non-test code must not import it).
//
// It imports actors, so it serves the tests of packages actors does not
// import, and external (package x_test) tests of any package.
package testkit

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
)

// ScenariosDir is the absolute path of the repository's scenarios/
// directory, found from this file's location (so it does not depend on
// the test's working directory).
func ScenariosDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok, "testkit: no caller information")
	return filepath.Join(filepath.Dir(file), "..", "..", "scenarios")
}

// Scenario parses the embedded scenario name (as "<embedded>/name") with
// opts and fails the test on any error. When opts.BaseDir is empty,
// relative trace paths resolve against ScenariosDir, as the CLI resolves
// them from the repository root.
func Scenario(t testing.TB, name string, opts topology.Options) *topology.Spec {
	t.Helper()
	src, err := scenarios.Read(name)
	require.NoError(t, err)
	if opts.BaseDir == "" {
		opts.BaseDir = ScenariosDir(t)
	}
	spec, err := topology.Parse(topology.EmbeddedPrefix+name, src, opts)
	require.NoError(t, err)
	return spec
}

// TraceMissing reports whether spec replays a trace that is not on this
// machine (the shared traces are not part of a fresh clone).
func TraceMissing(spec *topology.Spec) bool {
	if tr := spec.Workload.Trace; tr != "" {
		if _, err := os.Stat(tr); err != nil {
			return true
		}
	}
	return false
}

// SkipWithoutTrace skips the test when spec's trace is missing (see
// TraceMissing).
func SkipWithoutTrace(t testing.TB, spec *topology.Spec) {
	t.Helper()
	if TraceMissing(spec) {
		t.Skipf("trace not on this machine (%s)", spec.Workload.Trace)
	}
}

// Run parses the embedded scenario name (see Scenario), skips the test
// when its trace is not on this machine, and runs it to the end with
// actors.Options{}, failing the test on a run error.
func Run(t testing.TB, name string, opts topology.Options) *actors.Result {
	t.Helper()
	spec := Scenario(t, name, opts)
	SkipWithoutTrace(t, spec)
	res, err := actors.Run(context.Background(), spec, actors.Options{})
	require.NoError(t, err)
	return res
}

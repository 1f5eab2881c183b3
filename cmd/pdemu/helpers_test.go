package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Setup that the CLI tests repeat.

// buildPdemu builds the binary once per test; under -short it skips the
// test (a build takes most of a minute on a loaded machine).
func buildPdemu(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "pdemu")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// cliRun is a pdemu command line running in the background as main runs
// it: its output, its exit and its stop (cancel is what SIGINT does).
type cliRun struct {
	stdout, stderr *syncBuffer
	done           chan error
	cancel         context.CancelFunc
}

// startCLI runs the command line args in the background; the test's end
// cancels it if the test did not.
func startCLI(t *testing.T, args ...string) *cliRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &cliRun{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan error, 1), cancel: cancel}
	t.Cleanup(cancel)
	go func() { r.done <- run(ctx, args, r.stdout, r.stderr) }()
	return r
}

// wait returns the run's exit error, failing the test (what: the run)
// when it has not ended within limit, a bound for the test only, not a
// timing assertion.
func (r *cliRun) wait(t *testing.T, limit time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(limit):
		t.Fatalf("%s did not end in %v: %s", what, limit, r.stderr.String())
		return nil
	}
}

// waitHealthy waits until GET url/health answers 200.
func waitHealthy(t *testing.T, url string, r *cliRun) {
	t.Helper()
	require.Eventually(t, func() bool {
		res, err := http.Get(url + "/health")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "%s never became healthy: %s", url, r.stderr.String())
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// readPerRequest reads dir/per_request.csv back: its rows after the
// header, and each column's index by name; the test fails when a column
// of want is missing.
func readPerRequest(t *testing.T, dir string, want ...string) ([][]string, map[string]int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "per_request.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.NotEmpty(t, rows, "per_request.csv has a header")
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, c := range want {
		require.Contains(t, col, c, "per_request.csv has a %s column", c)
	}
	return rows[1:], col
}

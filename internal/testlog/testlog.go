// Package testlog gives a test an hclog.Logger that writes through t.Log,
// at Warn level, so that a run's warnings show only when the test fails
// (or under -v) and are attributed to the test that logged them.
//
// It is for _test.go files only (non-test code must not import it). It
// imports nothing of pdemu, so any package's tests can use it, including
// those of packages that internal/testkit imports (actors).
package testlog

import (
	"bytes"
	"io"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// New returns a logger named after the test that writes each line to
// t.Log, without its trailing newline.
func New(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: writer{t}})
}

type writer struct{ t testing.TB }

var _ io.Writer = writer{}

func (w writer) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

package testlog

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// recorder is a testing.TB that keeps what is logged to it.
type recorder struct {
	testing.TB
	lines []string
}

func (r *recorder) Log(args ...any) {
	for _, a := range args {
		r.lines = append(r.lines, a.(string))
	}
}

func (r *recorder) Helper() {}

// TestNew: warnings and errors reach t.Log one line each, without the
// trailing newline and under the test's name; info and debug do not.
func TestNew(t *testing.T) {
	r := &recorder{TB: t}
	log := New(r)
	log.Info("not shown")
	log.Debug("not shown either")
	log.Warn("slow", "worker", 3)
	log.Error("failed")
	if assert.Len(t, r.lines, 2) {
		assert.Contains(t, r.lines[0], "[WARN]  TestNew: slow: worker=3")
		assert.NotContains(t, r.lines[0], "\n")
		assert.Contains(t, r.lines[1], "[ERROR] TestNew: failed")
	}
}

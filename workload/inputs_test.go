package workload

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A zero the scenario wrote is honoured: Exact configurations take every
// field as given (today's GeneratorDefaults turned session_stagger = 0
// into 1 s and system_tokens = 0 into 4,000).
func TestAgenticExactHonoursZeros(t *testing.T) {
	cfg := AgenticConfig{Exact: true, Sessions: 5, Turns: 3, SystemTokens: 0, FirstTokens: 100,
		AppendTokens: 10, OutputTokens: 5, ThinkTime: 0, SessionStagger: 0, BlockTokens: 10}
	g, err := NewAgentic(cfg, 1, 0)
	require.NoError(t, err)
	reqs := drain(t, g)
	require.Len(t, reqs, 15)
	firsts := map[int32][]uint64{}
	for _, r := range reqs {
		assert.Zero(t, r.Think, "think_time = 0")
		if r.Turn == 0 {
			assert.Zero(t, r.Arrival, "session_stagger = 0: every session starts at once")
			firsts[r.Session] = r.Blocks
		}
	}
	// No shared system prefix: sessions' first blocks differ.
	require.Len(t, firsts, 5)
	assert.NotEqual(t, firsts[0][0], firsts[1][0], "system_tokens = 0: nothing shared")

	// Without Exact, zero fields still mean "the default" (the Go API).
	g, err = NewAgentic(AgenticConfig{Sessions: 2, Turns: 2}, 1, 0)
	require.NoError(t, err)
	reqs = drain(t, g)
	assert.Greater(t, reqs[len(reqs)-1].Arrival, time.Duration(0))

	// Zeros that cannot be honoured are refused, not replaced.
	for _, bad := range []AgenticConfig{
		{Exact: true, Sessions: 1, Turns: 1, FirstTokens: 1, AppendTokens: 0, OutputTokens: 1, BlockTokens: 1},
		{Exact: true, Sessions: 1, Turns: 1, FirstTokens: 1, AppendTokens: 1, OutputTokens: 0, BlockTokens: 1},
		{Exact: true, Sessions: 1, Turns: 1, FirstTokens: 1, AppendTokens: 1, OutputTokens: 1, BlockTokens: 1, SessionStagger: -1},
	} {
		_, err := NewAgentic(bad, 1, 0)
		assert.Error(t, err, "%+v", bad)
	}
}

// A request with 0 output tokens is replayed with 1 and the loader says
// so (Warner); before, it was raised silently.
func TestZeroOutputsAreReported(t *testing.T) {
	line := `{"timestamp": 0, "input_length": 100, "output_length": %s, "hash_ids": [1]}` + "\n"
	src := strings.ReplaceAll(line, "%s", "0") + strings.ReplaceAll(strings.ReplaceAll(line, "%s", "3"), `"timestamp": 0`, `"timestamp": 5`)
	s, err := OpenReader(strings.NewReader(src), "x.jsonl", FormatMooncake, LoadOptions{})
	require.NoError(t, err)
	reqs := drain(t, s)
	require.Len(t, reqs, 2)
	assert.Equal(t, 1, reqs[0].OutputLen)
	w, ok := s.(Warner)
	require.True(t, ok, "every loader is a Warner")
	require.Len(t, w.Warnings(), 1)
	assert.Contains(t, w.Warnings()[0], "1 request records 0 output tokens")

	// Claude Code: "out": 0.
	dir := t.TempDir()
	doc := bytes.Replace(genClaudeCode(2), []byte(`"out":100`), []byte(`"out":0`), 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trace_1.json"), doc, 0o644))
	cc, err := Open(dir, FormatClaudeCode, LoadOptions{})
	require.NoError(t, err)
	drain(t, cc)
	require.Len(t, cc.(Warner).Warnings(), 1)

	// A clean trace has no warnings.
	s, err = OpenReader(strings.NewReader(strings.ReplaceAll(line, "%s", "2")), "x.jsonl", FormatMooncake, LoadOptions{})
	require.NoError(t, err)
	drain(t, s)
	assert.Empty(t, s.(Warner).Warnings())
}

// Two Claude Code files with one session id would make two sessions with
// one name: a bad record now (skipped with SkipBad).
func TestClaudeCodeDuplicateIDs(t *testing.T) {
	dir := t.TempDir()
	doc := genClaudeCode(2)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trace_1.json"), doc, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trace_2.json"), doc, 0o644))
	src, err := Open(dir, FormatClaudeCode, LoadOptions{})
	require.NoError(t, err)
	err = drainErr(src)
	var re *RecordError
	require.True(t, errors.As(err, &re), "%T: %v", err, err)
	assert.Equal(t, filepath.Join(dir, "trace_2.json"), re.File)
	assert.Equal(t, "id", re.Field)
	assert.Contains(t, err.Error(), `session id "trace_mem" is also the id of`)

	src, err = Open(dir, FormatClaudeCode, LoadOptions{SkipBad: true})
	require.NoError(t, err)
	names := map[string]bool{}
	for _, r := range drain(t, src) {
		names[r.SessionName] = true
	}
	assert.Len(t, names, 2, "trace_mem and its subagent, once")
	assert.Equal(t, 1, src.(Skipper).Skipped())
}

// A symlink loop in a trace directory is bad input at a known place (a
// RecordError, exit 2), not an internal failure.
func TestClaudeCodeSymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trace_1.json"), genClaudeCode(2), 0o644))
	loop := filepath.Join(dir, "trace_2.json")
	require.NoError(t, os.Symlink(loop, loop))
	src, err := Open(dir, FormatClaudeCode, LoadOptions{})
	require.NoError(t, err)
	err = drainErr(src)
	var re *RecordError
	require.True(t, errors.As(err, &re), "%T: %v", err, err)
	assert.Equal(t, loop, re.File)
}

// lineLimit bounds the records of readers that buffer a whole record
// (Azure's encoding/csv), as lineReader bounds JSONL lines.
func TestLineLimit(t *testing.T) {
	var b bytes.Buffer
	ll := newLineLimit(strings.NewReader("ab\ncd\n"+strings.Repeat("x", 100)+"\n"), 10)
	_, err := b.ReadFrom(ll)
	require.ErrorIs(t, err, errLineTooLong)
	assert.Contains(t, err.Error(), "line 3 longer than 10 bytes")
	assert.Equal(t, "ab\ncd\n"+strings.Repeat("x", 10), b.String(), "everything before the limit is passed through")

	b.Reset()
	_, err = b.ReadFrom(newLineLimit(strings.NewReader("0123456789\n0123456789"), 10))
	require.NoError(t, err, "a line of exactly the limit is fine")
}

//go:build unix

package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStdinDigest: a trace on standard input is detected without being
// consumed and digested as it is read: the digest is the stream's, and
// none is given for a stream not read to its end.
func TestStdinDigest(t *testing.T) {
	data := genMooncake(200)
	old := stdin
	defer func() { stdin = old; stdinTrace.once = sync.Once{} }()
	stdin = bytes.NewReader(data)
	src, err := Open(Stdin, "", LoadOptions{})
	require.NoError(t, err)
	require.Len(t, drain(t, src), 200)
	d, ok := src.(Digester).Digest()
	require.True(t, ok)
	sum := sha256.Sum256(data)
	require.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), d)

	// Opened again (pdemu run's preflight, then the run): the same trace,
	// though a pipe can be read once.
	src, err = Open(Stdin, FormatMooncake, LoadOptions{MaxRequests: 1})
	require.NoError(t, err)
	require.Len(t, drain(t, src), 1)
	d2, ok := WithClientCap(src, 4).(Digester).Digest()
	require.True(t, ok)
	require.Equal(t, d, d2, "the whole stream's digest, not the prefix read")
}

// TestFIFORefused: a FIFO named as a trace (or inside a claude-code
// directory) is an error at once, with the way to replay a pipe; it used
// to block in open(2), deaf to SIGINT.
func TestFIFORefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "trace_1.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, format := range append([]string{""}, Formats()...) {
		_, err := Open(fifo, format, LoadOptions{})
		require.ErrorContains(t, err, "not a regular file (a FIFO)", format)
		require.ErrorContains(t, err, "--trace -", format)
	}
	src, err := Open(dir, FormatClaudeCode, LoadOptions{})
	if err == nil {
		_, err = src.Next()
	}
	require.ErrorContains(t, err, "not a regular file (a FIFO)")
	_, err = Open("/dev/zero", "", LoadOptions{})
	require.ErrorContains(t, err, "not a regular file (a character device)")
}

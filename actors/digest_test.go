package actors

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/metrics"
)

// TestTraceDigestFollowsTheFile: the remembered digest is the file's
// digest, and a rewrite of the file, even to the same size with its
// modification time set back, gives the new content's digest.
func TestTraceDigestFollowsTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(`{"a":1}`+"\n"), 0o644))
	want, err := metrics.DigestPath(p)
	require.NoError(t, err)
	for range 2 {
		got, err := traceDigest(p)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	st, err := os.Stat(p)
	require.NoError(t, err)
	time.Sleep(10 * time.Millisecond) // a later status-change time
	require.NoError(t, os.WriteFile(p, []byte(`{"a":2}`+"\n"), 0o644))
	require.NoError(t, os.Chtimes(p, st.ModTime(), st.ModTime()))
	want2, err := metrics.DigestPath(p)
	require.NoError(t, err)
	require.NotEqual(t, want, want2)
	got, err := traceDigest(p)
	require.NoError(t, err)
	require.Equal(t, want2, got, "a rewritten file's digest, not the remembered one")
}

package output

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/metrics"
)

// TestStreamedEvictionsEqualWrite: evictions.csv streamed row by row
// (Stream.Eviction, then the result's own rows at Write) holds the bytes
// metrics.WriteEvictions writes for the same rows, quoting included.
func TestStreamedEvictionsEqualWrite(t *testing.T) {
	rows := []metrics.EvictionRow{
		{At: 1500 * time.Microsecond, Worker: "d0", Session: "s1", Tokens: 4096, Cause: "capacity", For: 7},
		{At: -1, Worker: "d,1", Session: `q"uote`, Tokens: 0, Cause: "session-end", For: -1},
		{At: 2 * time.Second, Worker: " lead", Session: "", Tokens: 17, Cause: "transfer-failed", For: 0},
	}
	st, err := NewStream(t.TempDir(), StreamOptions{})
	require.NoError(t, err)
	defer st.Close()
	for _, r := range rows[:2] {
		require.NoError(t, st.Eviction(r))
	}
	require.NoError(t, st.finishEvictions(rows[2:]))
	got, err := os.ReadFile(st.ev.Name())
	require.NoError(t, err)
	var want bytes.Buffer
	require.NoError(t, metrics.WriteEvictions(&want, rows))
	require.Equal(t, want.String(), string(got))
}

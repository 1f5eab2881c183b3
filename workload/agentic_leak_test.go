package workload

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAgenticForgetsFinishedSessions: once a session's last turn is out,
// the generator holds nothing of it (its heap slot is cleared), so a long
// workload's memory follows the sessions still running, not all sessions.
func TestAgenticForgetsFinishedSessions(t *testing.T) {
	g, err := NewAgentic(AgenticConfig{Sessions: 40, Turns: 3}, 7, 0)
	require.NoError(t, err)
	for {
		_, err := g.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		items := g.h.Items()
		for i, s := range items[len(items):cap(items)] {
			require.Nil(t, s, "heap slot %d past the live sessions still holds a session", len(items)+i)
		}
	}
	require.Zero(t, g.h.Len())
}

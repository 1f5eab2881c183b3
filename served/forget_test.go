package served

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
)

// Issue 21 (flat memory): the router of a served run forgets sessions
// beyond its bound, as if they had ended; nothing of them is lost: their
// requests are in every total, the forgotten sessions are counted in
// summary.json and /metrics, and sessions.csv lists the others. The
// outputs are written through a real output.Stream (records and
// evictions.csv streamed, as pdemu serve writes them).
func TestServeForgetsSessionsCounted(t *testing.T) {
	dir := t.TempDir()
	st, err := output.NewStream(dir, output.StreamOptions{})
	require.NoError(t, err)
	defer st.Close()
	base, stop := startServe(t, scenarios.Default, Options{TimeScale: 50, Records: st, RouterSessions: 2})
	const sessions, turns = 6, 2
	for s := range sessions {
		var msgs [][2]string
		for turn := range turns {
			msgs = append(msgs, [2]string{"user", fmt.Sprintf("session %d turn %d: %s", s, turn, strings.Repeat("some context ", 30))})
			code, body := postMessages(t, base, fmt.Sprintf("forget-%d", s), 2, msgs...)
			require.Equal(t, http.StatusOK, code, body)
			c := testkit.JSON[completion](t, body)
			assert.Equal(t, turn, c.Pdemu.Turn, "a multi-turn conversation: one session")
			msgs = append(msgs, [2]string{"assistant", c.Choices[0].Message.Content})
		}
	}
	res, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	scrape, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	out, err := stop()
	require.NoError(t, err)
	require.NoError(t, st.Write(out.Result))
	sum := out.Summary
	assert.Equal(t, sessions*turns, sum.Requests.Total)
	require.NotNil(t, sum.Router)
	// Forgotten when a third session came: every session but the last two.
	assert.Equal(t, sessions-2, sum.Router.SessionsForgotten)
	_, rows := testkit.ReadCSV(t, filepath.Join(dir, "sessions.csv"))
	assert.Len(t, rows, 2, "the two sessions remembered (after the header)")
	assert.Nil(t, sum.Estimates, "12 requests: exact quantiles")
	evCol, _ := testkit.ReadCSV(t, filepath.Join(dir, "evictions.csv"))
	assert.Len(t, evCol, len(metrics.EvictionsHeader))
	for i, h := range metrics.EvictionsHeader {
		j, ok := evCol[h]
		assert.True(t, ok && j == i, "evictions.csv column %q at %d, want %d", h, j, i)
	}
	// Scraped before the stop: the router publishes every 200 ms at most,
	// so the family is there, its value may lag.
	assert.Contains(t, string(scrape), "pdemu_router_sessions_forgotten_total")
}

// A served run's instances.csv interval is a multiple of every series'
// (coarsened) grid, and unchanged when no series was coarsened.
func TestSeriesInterval(t *testing.T) {
	grid := func(g time.Duration) *metrics.Series {
		s := metrics.NewSeries("w", "decode")
		s.SetGrid(g)
		return s
	}
	for _, c := range []struct {
		iv    time.Duration
		grids []time.Duration
		want  time.Duration
	}{
		{0, []time.Duration{time.Second}, 0},
		{0, []time.Duration{time.Second, 4 * time.Second}, 4 * time.Second},
		{3 * time.Second, []time.Duration{time.Second, 8 * time.Second}, 24 * time.Second},
		{4 * time.Second, []time.Duration{2 * time.Second}, 4 * time.Second},
	} {
		res := &actors.Result{SampleInterval: c.iv}
		for _, g := range c.grids {
			res.Series = append(res.Series, grid(g))
		}
		assert.Equal(t, c.want, seriesInterval(res), "%v %v", c.iv, c.grids)
	}
}

package served

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/internal/promtest"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/serve"
)

// joined is what a fake ClientRecordSink got.
type joined struct {
	mu   sync.Mutex
	rows map[int64]metrics.ClientTimes
	fail error
}

func (j *joined) Record(r metrics.Record) error { return j.RecordClient(r, metrics.ClientTimes{}) }
func (j *joined) RecordClient(r metrics.Record, c metrics.ClientTimes) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, dup := j.rows[r.ID]; dup {
		return fmt.Errorf("record %d twice", r.ID)
	}
	j.rows[r.ID] = c
	return j.fail
}

// The join hands each record on exactly once, with its client times
// whichever half came first; flush hands on the records still waiting
// (no client times) and drops client times whose record never came.
func TestClientJoin(t *testing.T) {
	ct := func(ms int) metrics.ClientTimes {
		return metrics.ClientTimes{TTFT: time.Duration(ms) * time.Millisecond, HasTTFT: true}
	}
	sink := &joined{rows: map[int64]metrics.ClientTimes{}}
	j := newClientJoin(sink)
	require.NoError(t, j.Record(metrics.Record{ID: 0})) // record first
	j.client(0, ct(10))
	j.client(1, ct(11)) // client first
	require.NoError(t, j.Record(metrics.Record{ID: 1}))
	require.NoError(t, j.Record(metrics.Record{ID: 2})) // never gets client times
	j.client(3, ct(13))                                 // its record never comes (unfinished)
	recs, clients := j.pending()
	assert.Equal(t, [2]int{1, 1}, [2]int{recs, clients})
	require.NoError(t, j.flush())
	require.NoError(t, j.Record(metrics.Record{ID: 4})) // after the flush: straight on
	j.client(4, ct(14))                                 // too late: dropped
	assert.Equal(t, map[int64]metrics.ClientTimes{0: ct(10), 1: ct(11), 2: {}, 4: {}}, sink.rows)
	recs, clients = j.pending()
	assert.Equal(t, [2]int{0, 0}, [2]int{recs, clients})

	// A sink error fails the next Record and the flush.
	bad := &joined{rows: map[int64]metrics.ClientTimes{}, fail: errors.New("disk full")}
	j = newClientJoin(bad)
	j.client(0, ct(1))
	require.Error(t, j.Record(metrics.Record{ID: 0}))
	require.Error(t, j.Record(metrics.Record{ID: 1}))
	require.Error(t, j.flush())
}

// Both halves from many goroutines at once (the collector and the HTTP
// handlers): every record is handed on once with its own client times
// (run with -race).
func TestClientJoinConcurrent(t *testing.T) {
	const n = 2000
	sink := &joined{rows: map[int64]metrics.ClientTimes{}}
	j := newClientJoin(sink)
	var wg sync.WaitGroup
	wg.Go(func() {
		for id := range int64(n) {
			assert.NoError(t, j.Record(metrics.Record{ID: id}))
		}
	})
	for w := range int64(8) {
		wg.Go(func() {
			for id := w; id < n; id += 8 {
				j.client(id, metrics.ClientTimes{E2E: time.Duration(id), HasE2E: true})
			}
		})
	}
	wg.Wait()
	require.NoError(t, j.flush())
	require.Len(t, sink.rows, n)
	for id, c := range sink.rows {
		assert.Equal(t, metrics.ClientTimes{E2E: time.Duration(id), HasE2E: true}, c, "request %d", id)
	}
}

// Issue 21 row 6: a burst of concurrent openai-go clients, streaming and not,
// against `pdemu serve`'s own path (a Stream with client columns, as the
// CLI writes it). Every completed row of per_request.csv has what its
// client saw; client_late_ms is client_ttft_ms − ttft_ms (a stream at
// time scale 1) or client_e2e_ms − e2e_ms (not streamed), and
// summary.json served.client_late_ms summarises exactly that column.
// PDEMU_CLIENT_BURST=N sets the number of clients (default 200, 120 with
// -short).
func TestServeClientLatenessColumns(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 120
	}
	if v, err := strconv.Atoi(os.Getenv("PDEMU_CLIENT_BURST")); err == nil && v > 0 {
		n = v // e.g. 1000: issue 21 row 6's burst
	}
	dir := t.TempDir()
	st, err := output.NewStream(dir, output.StreamOptions{Client: true})
	require.NoError(t, err)
	defer st.Close()
	base, stop := startServe(t, scenarios.Default, Options{Records: st, HTTP: serve.Options{MaxInFlight: n}})
	tr := &http.Transport{MaxIdleConns: n, MaxIdleConnsPerHost: n}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	// Real clients: the official openai-go SDK, streaming and not.
	c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0), option.WithHTTPClient(hc))
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := openai.ChatCompletionNewParams{Model: "qwen3-coder-30b-a3b", MaxTokens: openai.Int(16),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("burst %d %s", i, strings.Repeat("words of context ", 30)))}}
			if i%4 == 0 { // a quarter not streamed
				r, err := c.Chat.Completions.New(context.Background(), p)
				if assert.NoError(t, err, "client %d", i) {
					assert.EqualValues(t, 16, r.Usage.CompletionTokens)
				}
				return
			}
			stream := c.Chat.Completions.NewStreaming(context.Background(), p)
			tokens := 0
			for stream.Next() {
				if ch := stream.Current(); len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
					tokens++
				}
			}
			assert.NoError(t, stream.Err(), "client %d", i)
			assert.Equal(t, 16, tokens, "client %d", i)
		})
	}
	wg.Wait()
	// Every client's lateness is on /metrics too, once each (a stream's
	// handler reports it just after its data: [DONE]).
	assert.Eventually(t, func() bool {
		fams := promtest.Scrape(t, base+"/metrics")
		return promtest.Sum(fams, "pdemu_served_late_seconds", map[string]string{"event": "client"}) == float64(n)
	}, 10*time.Second, 20*time.Millisecond)
	out, err := stop()
	require.NoError(t, err)
	require.NoError(t, st.Write(out.Result))
	require.Equal(t, n, out.Summary.Requests.Completed)

	col, rows := testkit.ReadCSV(t, filepath.Join(dir, "per_request.csv"))
	hdr := make([]string, len(col))
	for name, i := range col {
		hdr[i] = name
	}
	base0 := len(metrics.PerRequestHeader)
	require.Len(t, hdr, base0+len(metrics.ClientColumns))
	assert.Equal(t, metrics.PerRequestHeader, hdr[:base0], "run's columns first, unchanged")
	ms := func(row []string, name string) float64 {
		v, err := strconv.ParseFloat(row[col[name]], 64)
		require.NoError(t, err, "%s = %q", name, row[col[name]])
		return v
	}
	var lates []float64
	for _, row := range rows {
		require.Equal(t, "completed", row[col["state"]])
		ttft, e2e := ms(row, "ttft_ms"), ms(row, "e2e_ms")
		cttft, ce2e, late := ms(row, "client_ttft_ms"), ms(row, "client_e2e_ms"), ms(row, "client_late_ms")
		assert.LessOrEqual(t, cttft, ce2e, "row %s: first token after the end", row[0])
		// Rounding: three printed values of 0.0005 ms each.
		if cttft == ce2e && math.Abs(late-(ce2e-e2e)) <= 0.002 {
			// not streamed: the first token came with the response
		} else {
			assert.InDelta(t, cttft-ttft, late, 0.002, "row %s: client_late_ms = client_ttft_ms − ttft_ms", row[0])
		}
		lates = append(lates, late)
	}
	require.Len(t, lates, n)
	slices.Sort(lates)
	sl := out.Summary.Served
	require.NotNil(t, sl)
	require.NotNil(t, sl.Client)
	assert.Equal(t, n, sl.Client.Samples)
	assert.InDelta(t, lates[len(lates)-1], sl.Client.Max, 0.0011, "summary max is the column's")
	assert.InDelta(t, lates[int(0.9*float64(n))], sl.Client.P90, 0.0011, "summary p90 is the column's")
	assert.Greater(t, sl.Client.Max, 0.0, "a burst is late somewhere")
	t.Logf("%d clients: client_late_ms p50 %.1f / p90 %.1f / p99 %.1f / max %.1f (summary); first-token report lateness p99 %.1f ms; bound %.1f ms; late %v",
		n, sl.Client.P50, sl.Client.P90, sl.Client.P99, sl.Client.Max, sl.FirstToken.P99, sl.BoundMS, sl.Late)
	if sl.Late {
		var cited bool
		for _, w := range out.Summary.Warnings {
			cited = cited || strings.Contains(w, fmt.Sprintf("p90 %.1f / p99 %.1f / max %.1f wall ms over %d requests (per_request.csv client_late_ms)", sl.Client.P90, sl.Client.P99, sl.Client.Max, n))
		}
		assert.True(t, cited, "the warning cites the computed figures: %q", out.Summary.Warnings)
	}
}

// A cut drain (a second SIGINT) with client columns: the completed
// request's row has what its client saw, and so has the unfinished one's
// (its record comes from Stream.Write, never through the join: the join
// hands its client times to Stream.UnfinishedClient): the stream's first
// token was sent (client_ttft_ms, and its lateness client_late_ms) and
// the response ended with the cut's error event (client_e2e_ms); nothing
// waits in the join for ever.
func TestServeClientColumnsOfACutDrain(t *testing.T) {
	cut, cutNow := context.WithCancelCause(context.Background())
	defer cutNow(nil)
	dir := t.TempDir()
	st, err := output.NewStream(dir, output.StreamOptions{Client: true})
	require.NoError(t, err)
	defer st.Close()
	base, stop := startServe(t, scenarios.Default, Options{TimeScale: 1, Cut: cut, Records: st})
	code, body := post(t, base, "done", "a short answer", 2)
	require.Equal(t, http.StatusOK, code, body)
	res := longStream(t, base)
	defer res.Body.Close()
	stopped := stopAsync(stop)
	time.Sleep(50 * time.Millisecond) // draining
	cutNow(actors.StopCause("SIGINT"))
	o := <-stopped
	_, _ = io.ReadAll(res.Body)
	var pe *actors.PartialError
	require.ErrorAs(t, o.err, &pe)
	require.NoError(t, st.Write(o.res.Result))
	col, rows := testkit.ReadCSV(t, filepath.Join(dir, "per_request.csv"))
	require.Len(t, rows, 2)
	done, unfinished := rows[0], rows[1]
	assert.Equal(t, "completed", done[col["state"]])
	assert.NotEmpty(t, done[col["client_ttft_ms"]])
	assert.NotEmpty(t, done[col["client_e2e_ms"]])
	assert.NotEmpty(t, done[col["client_late_ms"]])
	assert.Equal(t, "unfinished", unfinished[col["state"]])
	for _, c := range metrics.ClientColumns {
		assert.NotEmpty(t, unfinished[col[c.Name]], c.Name)
	}
	ttft, err := strconv.ParseFloat(unfinished[col["client_ttft_ms"]], 64)
	require.NoError(t, err)
	e2e, err := strconv.ParseFloat(unfinished[col["client_e2e_ms"]], 64)
	require.NoError(t, err)
	assert.Positive(t, ttft)
	assert.Greater(t, e2e, ttft, "the cut came after the first token")
	assert.NotEmpty(t, unfinished[col["ttft_ms"]], "the record's own first token too")
}

// A request cut before its first token: its unfinished row has only what
// happened (the response's end, the cut's error), no first token and no
// lateness.
func TestServeClientColumnsCutBeforeTheFirstToken(t *testing.T) {
	cut, cutNow := context.WithCancelCause(context.Background())
	defer cutNow(nil)
	dir := t.TempDir()
	st, err := output.NewStream(dir, output.StreamOptions{Client: true})
	require.NoError(t, err)
	defer st.Close()
	// Time scale 0.001: the first token is 1,000 times further away than
	// the emulated TTFT; the cut comes long before.
	base, stop := startServe(t, scenarios.Default, Options{TimeScale: 0.001, Cut: cut, Records: st})
	res := make(chan *http.Response, 1)
	go func() {
		r, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(longBody))
		if err == nil {
			res <- r
		}
		close(res)
	}()
	time.Sleep(200 * time.Millisecond) // in flight
	stopped := stopAsync(stop)
	time.Sleep(50 * time.Millisecond) // draining
	cutNow(actors.StopCause("SIGINT"))
	o := <-stopped
	if r := <-res; r != nil {
		_, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	var pe *actors.PartialError
	require.ErrorAs(t, o.err, &pe)
	require.NoError(t, st.Write(o.res.Result))
	col, rows := testkit.ReadCSV(t, filepath.Join(dir, "per_request.csv"))
	require.Len(t, rows, 1)
	u := rows[0]
	assert.Equal(t, "unfinished", u[col["state"]])
	assert.Empty(t, u[col["client_ttft_ms"]], "no token was sent")
	assert.Empty(t, u[col["client_late_ms"]])
	assert.NotEmpty(t, u[col["client_e2e_ms"]], "the response ended (the cut's error)")
}

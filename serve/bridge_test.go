package serve

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/workload"
)

// fakeRun plays the emulated run behind a Bridge: it reads requests as the
// driver does and reports a first token after ttft and the end after
// out·itl, all in emulated time on the bridge's wall clock (scale 1).
func fakeRun(t *testing.T, b *Bridge, ttft, itl time.Duration, fail func(*workload.Request) string) *sync.WaitGroup {
	start := time.Now()
	now := func() time.Duration { return time.Since(start) }
	b.Attach(now)
	kick := make(chan struct{}, 1)
	b.SetNotify(func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	var wg sync.WaitGroup
	wg.Go(func() {
		for range kick {
			for {
				r, ok, drained := b.Take()
				if drained {
					return
				}
				if !ok {
					break
				}
				wg.Go(func() {
					arr := now()
					time.Sleep(ttft)
					first := arr + ttft
					if reason := fail(r); reason != "" {
						b.Ended(End{ID: r.ID, Worker: "d0", Arrival: arr, Done: first, Failed: reason, Now: now()})
						return
					}
					b.FirstToken(r.ID, "d0", arr, first, now())
					d := itl * time.Duration(r.OutputLen-1)
					time.Sleep(d)
					b.Ended(End{ID: r.ID, Worker: "d0", Mode: "Seed", CachedTokens: 24, Arrival: arr, FirstToken: first, Done: first + d, Now: now()})
				})
			}
		}
	})
	return &wg
}

func TestBridgeStreamsEveryToken(t *testing.T) {
	b := NewBridge(BridgeOptions{StepGuess: func(string, *workload.Request) time.Duration { return time.Millisecond }})
	run := fakeRun(t, b, 5*time.Millisecond, time.Millisecond, func(r *workload.Request) string {
		if r.OutputLen == 13 {
			return "exceeds-kv-pool"
		}
		return ""
	})
	for _, n := range []int{1, 2, 10, 40} {
		ev, err := b.Submit(context.Background(), &workload.Request{ID: 99, OutputLen: n})
		require.NoError(t, err)
		var got []Event
		for e := range ev {
			got = append(got, e)
		}
		require.Len(t, got, n+1, "n=%d", n)
		for i := range n {
			assert.Equal(t, EvToken, got[i].Kind)
			assert.Equal(t, i, got[i].Index)
			if i > 0 {
				assert.GreaterOrEqual(t, got[i].Since, got[i-1].Since)
			}
		}
		assert.Equal(t, 5*time.Millisecond, got[0].Since, "TTFT is the run's")
		end := got[n]
		assert.Equal(t, EvDone, end.Kind)
		assert.Equal(t, end.Since, got[n-1].Since, "the last token comes at the end")
		assert.Equal(t, 5*time.Millisecond+time.Duration(n-1)*time.Millisecond, end.Since)
		assert.Equal(t, "Seed", end.Mode)
		assert.Equal(t, 24, end.CachedTokens)
	}
	ev, err := b.Submit(context.Background(), &workload.Request{OutputLen: 13})
	require.NoError(t, err)
	var kinds []EventKind
	for e := range ev {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []EventKind{EvFailed}, kinds)
	b.Close()
	_, err = b.Submit(context.Background(), &workload.Request{OutputLen: 1})
	assert.ErrorIs(t, err, ErrClosed)
	run.Wait()
	b.Wait()
	st := b.Lag()
	assert.Equal(t, 9, st.Samples, "4 first tokens + 5 ends")
}

// The bridge behind the real server, driven by the SDK: IDs are dense in
// submission order and every stream ends.
func TestBridgeBehindServer(t *testing.T) {
	b := NewBridge(BridgeOptions{})
	run := fakeRun(t, b, time.Millisecond, 100*time.Microsecond, func(*workload.Request) string { return "" })
	_, base := start(t, Options{}, b)
	c := sdk(base)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(25)})
			n := 0
			for stream.Next() {
				if ch := stream.Current(); len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
					n++
				}
			}
			assert.NoError(t, stream.Err())
			assert.Equal(t, 25, n)
		})
	}
	wg.Wait()
	b.Close()
	run.Wait()
	b.Wait()
	assert.Equal(t, 40, b.Lag().Samples)
	assert.EqualValues(t, 20, b.nextID)
}

// Abort fails what is in flight (the run behind the bridge stopped) and
// Take reports drained.
func TestBridgeAbortFailsInFlight(t *testing.T) {
	b := NewBridge(BridgeOptions{})
	ev1, err := b.Submit(context.Background(), &workload.Request{OutputLen: 5})
	require.NoError(t, err)
	r, ok, _ := b.Take()
	require.True(t, ok)
	b.FirstToken(r.ID, "d0", 0, time.Millisecond, time.Millisecond)
	ev2, err := b.Submit(context.Background(), &workload.Request{OutputLen: 5})
	require.NoError(t, err)
	b.Abort("stopped")
	for _, ev := range []<-chan Event{ev1, ev2} {
		var last Event
		for e := range ev {
			last = e
		}
		assert.Equal(t, EvFailed, last.Kind)
		assert.Equal(t, "stopped", last.Reason)
	}
	_, ok, drained := b.Take()
	assert.False(t, ok)
	assert.True(t, drained)
	b.Wait()
}

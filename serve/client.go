package serve

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/pdemu/pdemu/metrics"
)

// What each request's HTTP client saw (issue 21 row 6): the relay times
// the first token's write and the response's last one from the request's
// arrival at the handler, and reports them per emulated request (each of
// n > 1 sequences is one) to a Cluster that runs on a wall clock
// (clientReporter). The Bridge summarises them (ServedLateness's Client)
// and hands them to its client sink (SetClientSink), which joins them to
// the request's per_request.csv record (served, output.Stream.RecordClient).

// clientReporter is what a wall-clock Cluster takes of what clients saw
// (Bridge implements it).
type clientReporter interface {
	Client(id int64, c metrics.ClientTimes)
	TimeScale() float64
}

// releaseKey is the request context key of the function that frees the
// request's admission slot (post).
type releaseKey struct{}

// releaseSlot frees r's admission slot (its answer is written).
func releaseSlot(r *http.Request) {
	if f, ok := r.Context().Value(releaseKey{}).(func()); ok {
		f()
	}
}

// arrivedKey is the request context key of the wall time the request
// reached the handler.
type arrivedKey struct{}

// withArrival notes in r's context that r arrived now.
func withArrival(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), arrivedKey{}, time.Now()))
}

// arrivedAt is when r reached the handler (now when it was not noted).
func arrivedAt(r *http.Request) time.Time {
	if t, ok := r.Context().Value(arrivedKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}

// clientTimes is what the client of choice ch saw: the first token's
// write (firstAt, zero if never), the response's end (endAt, zero if the
// client did not get it), from arrived; Late compares the stream's first
// token (or a non-streamed response) with the emulated TTFT (E2E) over
// scale.
func clientTimes(ch *choice, arrived time.Time, stream bool, scale float64) metrics.ClientTimes {
	var c metrics.ClientTimes
	if !ch.firstAt.IsZero() {
		c.TTFT, c.HasTTFT = ch.firstAt.Sub(arrived), true
	}
	if !ch.endAt.IsZero() {
		c.E2E, c.HasE2E = ch.endAt.Sub(arrived), true
	}
	wall := func(emulated time.Duration) time.Duration { return time.Duration(float64(emulated) / scale) }
	switch {
	case stream && c.HasTTFT && ch.first.Kind == EvToken:
		c.Late, c.HasLate = c.TTFT-wall(ch.first.Since), true
	case !stream && c.HasE2E && ch.ended && ch.end.Kind == EvDone:
		c.Late, c.HasLate = c.E2E-wall(ch.end.Since), true
	}
	return c
}

// SetClientSink sets what the Bridge hands each request's client times
// to (called on HTTP goroutines, concurrently; it may block briefly).
func (b *Bridge) SetClientSink(f func(id int64, c metrics.ClientTimes)) {
	b.mu.Lock()
	b.clientSink = f
	b.mu.Unlock()
}

// TimeScale is the run's time scale (emulated = wall × scale).
func (b *Bridge) TimeScale() float64 { return b.scale }

// Client records what request id's client saw: its lateness joins
// ServedLateness's Client, and the client sink gets it.
func (b *Bridge) Client(id int64, c metrics.ClientTimes) {
	b.mu.Lock()
	if c.HasLate {
		b.lateClient.Add(c.Late)
	}
	f := b.clientSink
	b.mu.Unlock()
	if f != nil {
		f(id, c)
	}
}

// clientLateness summarises the client lateness samples (nil when none);
// b.mu is held.
func (b *Bridge) clientLateness() *metrics.ClientLateness {
	if b.lateClient.N() == 0 {
		return nil
	}
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	qs, mx, n := b.lateClient.Quantiles(0.5, 0.9, 0.99)
	return &metrics.ClientLateness{P50: ms(qs[0]), P90: ms(qs[1]), P99: ms(qs[2]), Max: ms(mx), Samples: n}
}

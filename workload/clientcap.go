package workload

import (
	"io"
	"time"
)

// Client concurrency cap.
//
// The KVC paper's replay client (spec §7: time-scale 1.0, concurrency 32)
// issues each request at its trace time but keeps at most 32 requests
// outstanding: it is a cap on the client, not a number of sessions kept
// active. SetClientCap models that cap on the Driver; the generators'
// ActiveSessions (SWEBenchConfig, formerly Concurrency) is the other
// semantics — the timeline is rewritten so that a fixed number of sessions
// run at once — kept under its own name.
//
// Semantics of the cap (documented in docs/MODEL.md): a request takes a
// slot when the driver schedules it (at its trace time in open loop, at
// predecessor end + think in closed loop) and gives it back when it ends.
// A request due while every slot is taken waits, FIFO by due time (ties
// by request id), and is released when a slot frees (never before its due
// time). In closed loop a session's next turn therefore holds its slot
// through its think time: the cap counts sessions with a turn pending or
// in flight, which is at most the client's in-flight count plus the turns
// thinking. On the paper's 5.44 h timeline (one to three sessions overlap)
// the cap of 32 never binds; it binds on compressed timelines (time-scale
// 10, ActiveSessions).

// ClientCapper is implemented by sources that carry a client cap.
type ClientCapper interface {
	ClientCap() int
}

// wrapped is a Source inside another (a cap, a digest): Close, Warnings
// and Skipped are the inner source's (io.Closer, Warner, Skipper), so
// that wrapping hides none of them.
type wrapped struct{ Source }

// Close closes the wrapped source if it is an io.Closer.
func (w wrapped) Close() error {
	if cl, ok := w.Source.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

func (w wrapped) Warnings() []string {
	if wr, ok := w.Source.(Warner); ok {
		return wr.Warnings()
	}
	return nil
}

func (w wrapped) Skipped() int {
	if s, ok := w.Source.(Skipper); ok {
		return s.Skipped()
	}
	return 0
}

type cappedSource struct {
	wrapped
	cap int
}

func (c cappedSource) ClientCap() int { return c.cap }

// Digest is the wrapped source's (Digester): a cap does not hide it.
func (c cappedSource) Digest() (string, bool) {
	if d, ok := c.Source.(Digester); ok {
		return d.Digest()
	}
	return "", false
}

// WithClientCap returns src carrying a client concurrency cap of n
// (n <= 0: no cap). NewDriver applies it.
func WithClientCap(src Source, n int) Source {
	return cappedSource{wrapped: wrapped{src}, cap: n}
}

// SetClientCap caps the requests the driver keeps outstanding (scheduled
// or in flight) at n; n <= 0 removes the cap. Call it before Start.
func (d *Driver) SetClientCap(n int) { d.clientCap = max(0, n) }

// Held is the number of requests due but waiting for a client slot.
func (d *Driver) Held() int { return len(d.held) }

// gate applies the client cap to the releases a call appended to d.out
// after mark (err: the call's error, passed through): they join the held
// set, and the held releases earliest due first take the free slots,
// released at max(now, due).
func (d *Driver) gate(now time.Duration, mark int, err error) error {
	if err != nil || d.clientCap <= 0 {
		return err
	}
	d.held = append(d.held, d.out[mark:]...)
	d.out = d.out[:mark]
	for d.outstanding < d.clientCap && len(d.held) > 0 {
		b := 0
		for i := 1; i < len(d.held); i++ {
			x, y := d.held[i], d.held[b]
			if x.At < y.At || (x.At == y.At && x.Req.ID < y.Req.ID) {
				b = i
			}
		}
		r := d.held[b]
		d.held = append(d.held[:b], d.held[b+1:]...)
		r.At = max(now, r.At)
		d.outstanding++
		d.out = append(d.out, r)
	}
	return nil
}

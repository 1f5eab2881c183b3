package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/pdemu/pdemu/effect"
	"github.com/pdemu/pdemu/internal/idmap"
)

// Release asks the caller to hand Req to the router at emulated time At.
type Release struct {
	Req *Request
	At  time.Duration
}

// Driver decides when each request of a Source is released, in open loop
// (at its trace Arrival) or closed loop (turn 0 at its Arrival; turn t+1
// Think after turn t ended, never before). It is a pure state machine: the
// caller schedules every returned Release and reports back with Released
// and Ended, and collects the releases with Ready. It pulls from the Source lazily, so memory is proportional to
// the sessions whose turns were read ahead, not to the trace.
//
// Read-ahead (closed loop): a session's next turn can only be found by
// reading the source in its order, so when the replay lags the source's
// order (an overloaded run) the later turns read on the way wait in
// memory until their session gets there: up to every request of the
// started sessions. They wait compacted (see readAhead): about 64 bytes
// each, plus one blocks array per session (the newest; a session's
// earlier turns whose blocks are a prefix of it share it), not a Request
// and its own blocks array each.
type Driver struct {
	src    Source
	closed bool
	eof    bool

	// closed loop
	starts         []*Request                 // turn-0 requests read but not yet scheduled
	queued         idmap.Dense[*readAhead]    // later turns read ahead, per session
	waiting        idmap.Dense[time.Duration] // session whose predecessor ended at time t but whose next turn was not read yet
	startScheduled bool

	read     int
	released int
	ended    int
	out      []Release // releases since the last Ready

	// client cap (see SetClientCap): releases beyond the cap wait in held.
	clientCap   int
	outstanding int
	held        []Release

	// Allocation (issue 24): a read-ahead queue emptied goes to spareQ
	// for the next session that reads ahead (with its held array), and
	// pop builds its Requests in slabs of reqs.
	spareQ []*readAhead
	reqs   []Request
}

// NewDriver wraps src. closedLoop selects closed-loop session replay.
//
// If src carries a client cap (WithClientCap), the driver applies it as
// SetClientCap would.
func NewDriver(src Source, closedLoop bool) *Driver {
	d := &Driver{
		src: src, closed: closedLoop,
	}
	if c, ok := src.(ClientCapper); ok {
		d.SetClientCap(c.ClientCap())
	}
	return d
}

// Read is the number of requests read from the source so far.
func (d *Driver) Read() int { return d.read }

// Done reports whether every request of the source was released and ended.
func (d *Driver) Done() bool {
	return d.eof && d.released == d.read && d.ended == d.released
}

func (d *Driver) pull() (*Request, error) {
	if d.eof {
		return nil, nil
	}
	r, err := d.src.Next()
	if errors.Is(err, io.EOF) {
		d.eof = true
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("workload: source returned a nil request without error after %d requests", d.read)
	}
	d.read++
	return r, nil
}

// Ready returns and clears the releases decided since the last call, in
// order (the driver has no wake-up of its own: each Release says when).
// Out is reused: consume it before the next call on the driver.
func (d *Driver) Ready() effect.Ready[Release] {
	return effect.Take(&d.out, 0, false)
}

// Start decides the first releases.
func (d *Driver) Start(now time.Duration) error {
	if !d.closed {
		mark := len(d.out)
		return d.gate(now, mark, d.nextOpen(now))
	}
	mark := len(d.out)
	return d.gate(now, mark, d.scheduleStart(now))
}

func (d *Driver) nextOpen(now time.Duration) error {
	r, err := d.pull()
	if err != nil || r == nil {
		return err
	}
	d.out = append(d.out, Release{Req: r, At: max(now, r.Arrival)})
	return nil
}

// scheduleStart makes sure the earliest unreleased turn 0 is scheduled.
func (d *Driver) scheduleStart(now time.Duration) error {
	if d.startScheduled {
		return nil
	}
	for len(d.starts) == 0 && !d.eof {
		if err := d.readOne(now); err != nil {
			return err
		}
	}
	if len(d.starts) == 0 {
		return nil
	}
	r := d.starts[0]
	d.starts = d.starts[1:]
	d.startScheduled = true
	d.out = append(d.out, Release{Req: r, At: max(now, r.Arrival)})
	return nil
}

// isQueued reports whether session s has later turns read ahead.
func (d *Driver) isQueued(s int32) bool {
	q, _ := d.queued.Get(s)
	return q != nil
}

// readOne reads one request in closed loop and files it.
func (d *Driver) readOne(now time.Duration) error {
	r, err := d.pull()
	if err != nil || r == nil {
		return err
	}
	if r.Turn == 0 {
		d.starts = append(d.starts, r)
		return nil
	}
	if t, ok := d.waiting.Get(r.Session); ok && !d.isQueued(r.Session) {
		d.waiting.Delete(r.Session)
		d.out = append(d.out, Release{Req: r, At: max(now, t+r.Think)})
		return nil
	}
	q, _ := d.queued.Get(r.Session)
	if q == nil {
		if n := len(d.spareQ); n > 0 {
			q, d.spareQ[n-1] = d.spareQ[n-1], nil
			d.spareQ = d.spareQ[:n-1]
		} else {
			q = &readAhead{}
		}
		d.queued.Put(r.Session, q)
	}
	q.push(r)
	return nil
}

// Released must be called when a Release fires (the request went out).
func (d *Driver) Released(r *Request, now time.Duration) error {
	d.released++
	if !d.closed {
		mark := len(d.out)
		return d.gate(now, mark, d.nextOpen(now))
	}
	if r.Turn == 0 {
		d.startScheduled = false
		mark := len(d.out)
		return d.gate(now, mark, d.scheduleStart(now))
	}
	return nil
}

// Ended must be called once when a request completed or failed.
func (d *Driver) Ended(r *Request, now time.Duration) error {
	d.ended++
	if d.clientCap > 0 {
		d.outstanding--
	}
	mark := len(d.out)
	return d.gate(now, mark, d.ended1(r, now))
}

func (d *Driver) ended1(r *Request, now time.Duration) error {
	if !d.closed {
		return nil
	}
	if q, _ := d.queued.Get(r.Session); q != nil {
		if len(d.reqs) == 0 {
			d.reqs = make([]Request, reqSlab)
		}
		next := q.pop(&d.reqs[0])
		if next == &d.reqs[0] {
			d.reqs = d.reqs[1:]
		}
		if q.len() == 0 {
			d.queued.Delete(r.Session)
			q.base, q.name = nil, "" // let the session's blocks go
			if cap(q.held) > 256 {
				q.held = nil // an overloaded run's long queue: not kept for reuse
			}
			d.spareQ = append(d.spareQ, q)
		}
		d.out = append(d.out, Release{Req: next, At: now + next.Think})
		return nil
	}
	if r.Last {
		return nil
	}
	// The next turn (if any) was not read yet: read ahead until it shows up.
	d.waiting.Put(r.Session, now)
	for !d.eof {
		if _, ok := d.waiting.Get(r.Session); !ok {
			break
		}
		if err := d.readOne(now); err != nil {
			return err
		}
	}
	d.waiting.Delete(r.Session)
	// Reading ahead may have found the next session start.
	return d.scheduleStart(now)
}

// readAhead is one session's later turns read ahead, oldest first, kept
// compact: a request's fields in a held, its blocks a prefix of base (the
// newest shared blocks) when they are one, so that the session's earlier
// blocks arrays (and the Requests) can go. pop rebuilds an equal Request.
type readAhead struct {
	base    []uint64
	session int32
	name    string
	held    []held
	head    int
}

// held is a request waiting in a readAhead. full keeps the request as is
// when it cannot be compacted (a field out of int32 range, another
// session, blocks that are not a prefix of the newest).
type held struct {
	id                 int64
	arrival, think     time.Duration
	in, out, app, turn int32
	nb, blockTokens    int32
	last, shared       bool
	full               *Request
}

func fits(v int) bool { return v >= math.MinInt32 && v <= math.MaxInt32 }

func (q *readAhead) len() int { return len(q.held) - q.head }

func (q *readAhead) push(r *Request) {
	if q.len() == 0 {
		q.base, q.session, q.name, q.held, q.head = nil, r.Session, r.SessionName, q.held[:0], 0
	}
	if r.Session != q.session || r.SessionName != q.name || (r.Blocks != nil && len(r.Blocks) == 0) ||
		!fits(r.InputLen) || !fits(r.OutputLen) || !fits(r.AppendLen) ||
		!fits(r.Turn) || !fits(len(r.Blocks)) || !fits(r.BlockTokens) {
		q.append(held{full: r})
		return
	}
	h := held{id: r.ID, arrival: r.Arrival, think: r.Think, in: int32(r.InputLen), out: int32(r.OutputLen),
		app: int32(r.AppendLen), turn: int32(r.Turn), nb: int32(len(r.Blocks)), blockTokens: int32(r.BlockTokens), last: r.Last}
	// The shared requests' blocks are base[:nb]: r becomes the new base
	// if base is a prefix of its blocks (the same array, or equal values:
	// a session's prompt only grows).
	switch {
	case len(r.Blocks) <= len(q.base) && prefixOf(r.Blocks, q.base):
		h.shared = true
	case prefixOf(q.base, r.Blocks):
		q.base, h.shared = r.Blocks, true
	default:
		h.full = r
	}
	q.append(h)
}

// append adds h at the back, moving the queue to the front of its array
// rather than growing it when popped slots are free there.
func (q *readAhead) append(h held) {
	if q.held == nil {
		// A session that reads ahead usually reads several turns (the
		// default scenario: all 24 before the first is popped); growing
		// from one was ~6 allocations per session.
		q.held = make([]held, 0, 16)
	}
	if len(q.held) == cap(q.held) && q.head > 0 {
		n := copy(q.held, q.held[q.head:])
		clear(q.held[n:])
		q.held, q.head = q.held[:n], 0
	}
	q.held = append(q.held, h)
}

// prefixOf reports whether a is a prefix of b.
func prefixOf(a, b []uint64) bool {
	if len(a) > len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return slices.Equal(a, b[:len(a)])
}

// pop returns the oldest request: the one pushed if it was kept whole,
// else an equal one rebuilt in *into.
func (q *readAhead) pop(into *Request) *Request {
	h := q.held[q.head]
	q.held[q.head] = held{}
	q.head++
	if h.full != nil {
		return h.full
	}
	r := into
	*r = Request{ID: h.id, Session: q.session, SessionName: q.name, Turn: int(h.turn), Arrival: h.arrival, Think: h.think,
		InputLen: int(h.in), OutputLen: int(h.out), BlockTokens: int(h.blockTokens), AppendLen: int(h.app), Last: h.last}
	if h.nb > 0 {
		r.Blocks = q.base[:h.nb:h.nb]
	}
	return r
}

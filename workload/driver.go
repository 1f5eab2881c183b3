package workload

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pdemu/pdemu/effect"
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
type Driver struct {
	src    Source
	closed bool
	eof    bool

	// closed loop
	starts         []*Request              // turn-0 requests read but not yet scheduled
	queued         map[int32][]*Request    // later turns read ahead, per session
	waiting        map[int32]time.Duration // session whose predecessor ended at time t but whose next turn was not read yet
	startScheduled bool

	read     int
	released int
	ended    int
	out      []Release // releases since the last Ready

	// client cap (see SetClientCap): releases beyond the cap wait in held.
	clientCap   int
	outstanding int
	held        []Release
}

// NewDriver wraps src. closedLoop selects closed-loop session replay.
//
// If src carries a client cap (WithClientCap), the driver applies it as
// SetClientCap would.
func NewDriver(src Source, closedLoop bool) *Driver {
	d := &Driver{
		src: src, closed: closedLoop,
		queued: map[int32][]*Request{}, waiting: map[int32]time.Duration{},
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
	if t, ok := d.waiting[r.Session]; ok && len(d.queued[r.Session]) == 0 {
		delete(d.waiting, r.Session)
		d.out = append(d.out, Release{Req: r, At: max(now, t+r.Think)})
		return nil
	}
	d.queued[r.Session] = append(d.queued[r.Session], r)
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
	if q := d.queued[r.Session]; len(q) > 0 {
		next := q[0]
		if len(q) == 1 {
			delete(d.queued, r.Session)
		} else {
			d.queued[r.Session] = q[1:]
		}
		d.out = append(d.out, Release{Req: next, At: now + next.Think})
		return nil
	}
	if r.Last {
		return nil
	}
	// The next turn (if any) was not read yet: read ahead until it shows up.
	d.waiting[r.Session] = now
	for !d.eof {
		if _, ok := d.waiting[r.Session]; !ok {
			break
		}
		if err := d.readOne(now); err != nil {
			return err
		}
	}
	delete(d.waiting, r.Session)
	// Reading ahead may have found the next session start.
	return d.scheduleStart(now)
}

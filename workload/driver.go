package workload

import (
	"errors"
	"fmt"
	"io"
	"time"
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
// and Ended. It pulls from the Source lazily, so memory is proportional to
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

// Start returns the first releases.
func (d *Driver) Start(now time.Duration) ([]Release, error) {
	if !d.closed {
		return d.gate(now)(d.nextOpen(now))
	}
	return d.gate(now)(d.scheduleStart(now, nil))
}

func (d *Driver) nextOpen(now time.Duration) ([]Release, error) {
	r, err := d.pull()
	if err != nil || r == nil {
		return nil, err
	}
	return []Release{{Req: r, At: max(now, r.Arrival)}}, nil
}

// scheduleStart makes sure the earliest unreleased turn 0 is scheduled.
func (d *Driver) scheduleStart(now time.Duration, out []Release) ([]Release, error) {
	if d.startScheduled {
		return out, nil
	}
	for len(d.starts) == 0 && !d.eof {
		var err error
		if out, err = d.readOne(now, out); err != nil {
			return out, err
		}
	}
	if len(d.starts) == 0 {
		return out, nil
	}
	r := d.starts[0]
	d.starts = d.starts[1:]
	d.startScheduled = true
	return append(out, Release{Req: r, At: max(now, r.Arrival)}), nil
}

// readOne reads one request in closed loop and files it.
func (d *Driver) readOne(now time.Duration, out []Release) ([]Release, error) {
	r, err := d.pull()
	if err != nil || r == nil {
		return out, err
	}
	if r.Turn == 0 {
		d.starts = append(d.starts, r)
		return out, nil
	}
	if t, ok := d.waiting[r.Session]; ok && len(d.queued[r.Session]) == 0 {
		delete(d.waiting, r.Session)
		return append(out, Release{Req: r, At: max(now, t+r.Think)}), nil
	}
	d.queued[r.Session] = append(d.queued[r.Session], r)
	return out, nil
}

// Released must be called when a Release fires (the request went out).
func (d *Driver) Released(r *Request, now time.Duration) ([]Release, error) {
	d.released++
	if !d.closed {
		return d.gate(now)(d.nextOpen(now))
	}
	if r.Turn == 0 {
		d.startScheduled = false
		return d.gate(now)(d.scheduleStart(now, nil))
	}
	return nil, nil
}

// Ended must be called once when a request completed or failed.
func (d *Driver) Ended(r *Request, now time.Duration) ([]Release, error) {
	d.ended++
	if d.clientCap > 0 {
		d.outstanding--
	}
	return d.gate(now)(d.ended1(r, now))
}

func (d *Driver) ended1(r *Request, now time.Duration) ([]Release, error) {
	if !d.closed {
		return nil, nil
	}
	if q := d.queued[r.Session]; len(q) > 0 {
		next := q[0]
		if len(q) == 1 {
			delete(d.queued, r.Session)
		} else {
			d.queued[r.Session] = q[1:]
		}
		return []Release{{Req: next, At: now + next.Think}}, nil
	}
	if r.Last {
		return nil, nil
	}
	// The next turn (if any) was not read yet: read ahead until it shows up.
	d.waiting[r.Session] = now
	var out []Release
	for !d.eof {
		if _, ok := d.waiting[r.Session]; !ok {
			break
		}
		var err error
		if out, err = d.readOne(now, out); err != nil {
			return out, err
		}
	}
	delete(d.waiting, r.Session)
	// Reading ahead may have found the next session start.
	return d.scheduleStart(now, out)
}

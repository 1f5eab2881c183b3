package actors

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/internal/minheap"
	"github.com/pdemu/pdemu/internal/reservoir"
	"github.com/pdemu/pdemu/metrics"
)

// Clock carries every message between actors, now or after an emulated
// delay, and tells the emulated time.
type Clock interface {
	// Now is the emulated time since the start of the run.
	Now() time.Duration
	// Send delivers msg to `to` after the emulated delay d. from is the
	// sending actor's id and seq its own send counter (deterministic order).
	Send(from int32, seq uint64, to *actor.PID, msg any, d time.Duration)
	// sendOut is Send for each of a node's envelopes in order, numbered on
	// from *seq (sendout.go).
	sendOut(from int32, seq *uint64, pids []*actor.PID, out []cluster.Envelope)
	// handled is called once after an actor handled a message that Send
	// delivered.
	handled()
}

// ---------------------------------------------------------------- virtual

// VirtualClock is the deterministic discrete-event clock (see the package
// documentation).
type VirtualClock struct {
	sys *actor.ActorSystem

	mu sync.Mutex
	q  vqueue // vqueue.go

	now      atomic.Int64
	inflight atomic.Int64
	idle     chan struct{}
	abort    atomic.Bool

	steps    int64
	messages int64
	batch    []vslot
}

// NewVirtualClock returns a clock delivering through sys.
func NewVirtualClock(sys *actor.ActorSystem) *VirtualClock {
	return &VirtualClock{sys: sys, idle: make(chan struct{}, 1)}
}

// Now implements Clock.
func (c *VirtualClock) Now() time.Duration { return time.Duration(c.now.Load()) }

// Send implements Clock.
func (c *VirtualClock) Send(from int32, seq uint64, to *actor.PID, msg any, d time.Duration) {
	if d < 0 {
		d = 0
	}
	c.mu.Lock()
	c.q.push(c.Now()+d, from, seq, to, msg, d == 0)
	c.mu.Unlock()
}

func (c *VirtualClock) handled() {
	if c.inflight.Add(-1) == 0 {
		c.idle <- struct{}{}
	}
}

// Abort makes Run return after the current step.
func (c *VirtualClock) Abort() { c.abort.Store(true) }

// Steps and Messages count the delivery steps and messages so far.
func (c *VirtualClock) Steps() int64    { return c.steps }
func (c *VirtualClock) Messages() int64 { return c.messages }

// Run delivers messages step by step until none is left, ctx is done,
// Abort is called, or the emulated time would pass horizon (0 = none).
func (c *VirtualClock) Run(ctx context.Context, horizon time.Duration) error {
	for {
		if c.abort.Load() {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("virtual clock stopped at %v: %w", c.Now(), err)
		}
		c.mu.Lock()
		at, ok := c.q.next()
		if !ok {
			c.mu.Unlock()
			return nil
		}
		if horizon > 0 && at > horizon {
			c.mu.Unlock()
			return fmt.Errorf("virtual clock: emulated time would pass the horizon %v with %d messages pending", horizon, c.q.len())
		}
		c.batch = c.q.take(at, c.batch[:0])
		c.mu.Unlock()
		c.now.Store(int64(at))
		c.steps++
		c.messages += int64(len(c.batch))
		// The clock holds one count of its own while it delivers: on the
		// synchronized dispatcher every message is handled inside its Send,
		// so releasing that count finds zero and the step needs no channel
		// hand-off; only a message handled elsewhere (a mailbox resumed by
		// the supervisor's goroutine) makes the clock wait for its handled.
		batch, root := c.batch, c.sys.Root
		c.inflight.Store(int64(len(batch)) + 1)
		for i := range batch {
			root.Send(batch[i].to, batch[i].msg)
		}
		clear(batch) // let the GC have the messages
		if c.inflight.Add(-1) != 0 {
			<-c.idle
		}
	}
}

// ---------------------------------------------------------------- wall

// WallClock runs emulated time as real time multiplied by Scale.
//
// It measures its own fidelity (Judge): how late each timer delivery was,
// in real and in emulated time, and the share of real time the process was
// saturated: at least one delivered message not yet handled by its actor
// (shell reports each handled message). A run that keeps up spends most of
// its real time waiting for timers; one that cannot is always busy, and
// its messages queue in mailboxes on top of the timer lateness.
type WallClock struct {
	sys   *actor.ActorSystem
	scale float64
	start time.Time

	stopped atomic.Bool
	mu      sync.Mutex       // guards late and the timers
	late    reservoir.Sample // timer lateness: exact count and max, a bounded uniform sample

	// Timed messages wait in one heap served by one goroutine (timers),
	// started on the first timed Send: it wakes at the earliest due time
	// and delivers every message due by then. A time.AfterFunc per message
	// ran each delivery on a goroutine of its own (a hand-off per timed
	// message, and a timer and a closure allocated for it).
	timers    *minheap.Heap[wtimer] // by lessWtimer
	timerSeq  uint64
	timerOnce sync.Once
	kick      chan struct{} // an earlier timer was queued
	done      chan struct{} // closed by Stop
	stopOnce  sync.Once

	// pending counts delivered messages not yet handled. It changes by
	// atomic compare-and-swap; only its transitions between 0 and 1 (the
	// start and end of a busy span) take busyMu, so that they and the
	// busy-time bookkeeping happen in one order. A mutex per delivery and
	// per handled message, shared by every actor, was a contended lock on
	// every message hop.
	pending   atomic.Int64
	busyMu    sync.Mutex
	busySince time.Time
	busy      time.Duration
	stopAt    time.Time
}

// NewWallClock starts a wall clock now; scale must be > 0.
func NewWallClock(sys *actor.ActorSystem, scale float64) *WallClock {
	return &WallClock{sys: sys, scale: scale, start: time.Now(),
		timers: minheap.New(lessWtimer),
		kick:   make(chan struct{}, 1), done: make(chan struct{})}
}

// wtimer is a message due at a real time; seq orders equal due times.
type wtimer struct {
	due time.Time
	seq uint64
	to  *actor.PID
	msg any
}

// lessWtimer orders the wall clock's timers by (due, seq). The timers wait
// in a minheap.Heap: they are not the virtual clock's hot path (vheap).
func lessWtimer(a, b *wtimer) bool {
	if !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	return a.seq < b.seq
}

// serveTimers delivers the timed messages as they fall due, until Stop.
func (c *WallClock) serveTimers() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []wtimer
	for {
		now := time.Now()
		c.mu.Lock()
		due = due[:0]
		for c.timers.Len() > 0 && !c.timers.Min().due.After(now) {
			due = append(due, c.timers.Pop())
		}
		for _, w := range due {
			c.late.Add(now.Sub(w.due))
		}
		wait, has := time.Duration(0), c.timers.Len() > 0
		if has {
			wait = c.timers.Min().due.Sub(now)
		}
		c.mu.Unlock()
		for i := range due {
			if c.stopped.Load() {
				return
			}
			c.deliver(due[i].to, due[i].msg)
			due[i] = wtimer{}
		}
		if has {
			t.Reset(wait)
		} else {
			t.Stop()
		}
		select {
		case <-t.C:
		case <-c.kick:
		case <-c.done:
			return
		}
	}
}

// Now implements Clock.
func (c *WallClock) Now() time.Duration {
	return time.Duration(float64(time.Since(c.start)) * c.scale)
}

// deliver hands msg to its actor and counts it as pending until handled.
func (c *WallClock) deliver(to *actor.PID, msg any) {
	for {
		p := c.pending.Load()
		if p != 0 {
			if c.pending.CompareAndSwap(p, p+1) {
				break
			}
			continue
		}
		c.busyMu.Lock()
		ok := c.pending.CompareAndSwap(0, 1)
		if ok {
			c.busySince = time.Now()
		}
		c.busyMu.Unlock()
		if ok {
			break
		}
	}
	c.sys.Root.Send(to, msg)
}

// Send implements Clock.
func (c *WallClock) Send(_ int32, _ uint64, to *actor.PID, msg any, d time.Duration) {
	if c.stopped.Load() {
		return
	}
	if d <= 0 {
		c.deliver(to, msg)
		return
	}
	real := time.Duration(float64(d) / c.scale)
	c.timerOnce.Do(func() { go c.serveTimers() })
	c.mu.Lock()
	c.timerSeq++
	c.timers.Push(wtimer{due: time.Now().Add(real), seq: c.timerSeq, to: to, msg: msg})
	first := c.timers.Min().seq == c.timerSeq
	c.mu.Unlock()
	if first { // the server may be sleeping until a later one
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

func (c *WallClock) handled() {
	for {
		// p < 1: a message the clock did not deliver (a test's direct
		// Send); it is counted as before, with no busy span.
		p := c.pending.Load()
		if p != 1 {
			if c.pending.CompareAndSwap(p, p-1) {
				return
			}
			continue
		}
		c.busyMu.Lock()
		ok := c.pending.CompareAndSwap(1, 0)
		if ok {
			c.busy += time.Since(c.busySince)
		}
		c.busyMu.Unlock()
		if ok {
			return
		}
	}
}

// Stop makes pending and future timers drop their messages (and ends the
// timer goroutine).
func (c *WallClock) Stop() {
	c.stopped.Store(true)
	c.stopOnce.Do(func() { close(c.done) })
	c.busyMu.Lock()
	if c.stopAt.IsZero() {
		c.stopAt = time.Now()
	}
	c.busyMu.Unlock()
}

// Lateness returns the timer lateness samples (real time), sorted: every
// one up to 65,536 deliveries, a uniform sample of that many beyond.
func (c *WallClock) Lateness() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.late.Sorted()
}

// SaturatedShare is the share of the real time from start to Stop (or
// now) during which some delivered message was not yet handled.
func (c *WallClock) SaturatedShare() float64 {
	c.busyMu.Lock()
	defer c.busyMu.Unlock()
	end := c.stopAt
	if end.IsZero() {
		end = time.Now()
	}
	busy := c.busy
	if c.pending.Load() > 0 {
		busy += end.Sub(c.busySince)
	}
	total := end.Sub(c.start)
	if total <= 0 {
		return 0
	}
	return min(1, max(0, float64(busy)/float64(total)))
}

// Judge fills the clock section of a wall run's summary: lateness in real
// and emulated time, saturated share and the fidelity verdict against the
// run's TTFT p50 (emulated ms); see metrics.JudgeWall for the bound.
func (c *WallClock) Judge(clk *metrics.Clock, ttftP50 float64) {
	metrics.JudgeWall(clk, c.Lateness(), c.scale, c.SaturatedShare(), ttftP50)
	c.mu.Lock()
	n, mx := c.late.N(), c.late.Max()
	c.mu.Unlock()
	if n > reservoir.Cap { // sampled: the count and the maximum are still exact
		scale := c.scale
		if scale <= 0 {
			scale = 1
		}
		clk.Lateness.Samples, clk.Lateness.Max = n, math.Round(float64(mx)/1e3)/1e3
		clk.EmulatedLateness.Samples, clk.EmulatedLateness.Max = n, math.Round(float64(mx)*scale/1e3)/1e3
	}
}

// lessVkey is vheap's order as a minheap.Heap's Less (benchmarked
// against vheap in BenchmarkClockHeap).
func lessVkey(a, b *vkey) bool { return a.before(b) }

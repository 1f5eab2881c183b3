package actors

import (
	"container/heap"
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Clock carries every message between actors, now or after an emulated
// delay, and tells the emulated time.
type Clock interface {
	// Now is the emulated time since the start of the run.
	Now() time.Duration
	// Send delivers msg to `to` after the emulated delay d. from is the
	// sending actor's id and seq its own send counter (deterministic order).
	Send(from int32, seq uint64, to *actor.PID, msg any, d time.Duration)
	// handled is called once after an actor handled a message that Send
	// delivered.
	handled()
}

// envelope marks a message delivered by a Clock.
type envelope struct{ msg any }

// ---------------------------------------------------------------- virtual

type vevent struct {
	at   time.Duration
	from int32
	seq  uint64
	to   *actor.PID
	msg  any
}

type vheap []vevent

func (h vheap) Len() int { return len(h) }
func (h vheap) Less(i, j int) bool {
	a, b := &h[i], &h[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.from != b.from {
		return a.from < b.from
	}
	return a.seq < b.seq
}
func (h vheap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *vheap) Push(x any)   { *h = append(*h, x.(vevent)) }
func (h *vheap) Pop() any {
	old := *h
	n := len(old)
	x := old[n-1]
	old[n-1] = vevent{}
	*h = old[:n-1]
	return x
}

// VirtualClock is the deterministic discrete-event clock (see the package
// documentation).
type VirtualClock struct {
	sys *actor.ActorSystem

	mu sync.Mutex
	q  vheap

	now      atomic.Int64
	inflight atomic.Int64
	idle     chan struct{}
	abort    atomic.Bool

	steps    int64
	messages int64
	batch    []vevent
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
	ev := vevent{at: c.Now() + d, from: from, seq: seq, to: to, msg: msg}
	c.mu.Lock()
	heap.Push(&c.q, ev)
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
		if len(c.q) == 0 {
			c.mu.Unlock()
			return nil
		}
		at := c.q[0].at
		if horizon > 0 && at > horizon {
			c.mu.Unlock()
			return fmt.Errorf("virtual clock: emulated time would pass the horizon %v with %d messages pending", horizon, len(c.q))
		}
		c.batch = c.batch[:0]
		for len(c.q) > 0 && c.q[0].at == at {
			c.batch = append(c.batch, heap.Pop(&c.q).(vevent))
		}
		c.mu.Unlock()
		c.now.Store(int64(at))
		c.steps++
		c.messages += int64(len(c.batch))
		c.inflight.Store(int64(len(c.batch)))
		for i := range c.batch {
			c.sys.Root.Send(c.batch[i].to, &envelope{c.batch[i].msg})
			c.batch[i] = vevent{}
		}
		<-c.idle
	}
}

// ---------------------------------------------------------------- wall

// WallClock runs emulated time as real time multiplied by Scale.
type WallClock struct {
	sys   *actor.ActorSystem
	scale float64
	start time.Time

	stopped atomic.Bool
	mu      sync.Mutex
	late    []time.Duration
}

// NewWallClock starts a wall clock now; scale must be > 0.
func NewWallClock(sys *actor.ActorSystem, scale float64) *WallClock {
	return &WallClock{sys: sys, scale: scale, start: time.Now()}
}

// Now implements Clock.
func (c *WallClock) Now() time.Duration {
	return time.Duration(float64(time.Since(c.start)) * c.scale)
}

// Send implements Clock.
func (c *WallClock) Send(_ int32, _ uint64, to *actor.PID, msg any, d time.Duration) {
	if c.stopped.Load() {
		return
	}
	if d <= 0 {
		c.sys.Root.Send(to, &envelope{msg})
		return
	}
	real := time.Duration(float64(d) / c.scale)
	intended := time.Now().Add(real)
	time.AfterFunc(real, func() {
		if c.stopped.Load() {
			return
		}
		late := time.Since(intended)
		c.mu.Lock()
		c.late = append(c.late, late)
		c.mu.Unlock()
		c.sys.Root.Send(to, &envelope{msg})
	})
}

func (c *WallClock) handled() {}

// Stop makes pending and future timers drop their messages.
func (c *WallClock) Stop() { c.stopped.Store(true) }

// Lateness returns the timer lateness samples (real time), sorted.
func (c *WallClock) Lateness() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]time.Duration(nil), c.late...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

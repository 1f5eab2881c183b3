package actors

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// handler is an actor's logic; it sees only clock-delivered messages.
type handler interface {
	handle(msg any)
}

// querier is implemented by actors that answer out-of-band queries (run
// reports read after the run): q is answered with ctx.Respond.
type querier interface {
	query(q any) any
}

// node is what every pdemu actor embeds: its identity for deterministic
// ordering and its way to send through the clock.
type node struct {
	id   int32
	name string
	seq  uint64
	self *actor.PID
	clk  Clock
}

func (n *node) now() time.Duration { return n.clk.Now() }

// send delivers msg to `to` after the emulated delay d.
func (n *node) send(to *actor.PID, msg any, d time.Duration) {
	n.seq++
	n.clk.Send(n.id, n.seq, to, msg, d)
}

// shell adapts a handler to protoactor: it unwraps clock envelopes, reports
// the message as handled to the clock, and turns a panic into a run failure
// instead of a silent supervisor restart.
type shell struct {
	n   *node
	h   handler
	run *runState
}

func (s *shell) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *envelope:
		defer s.n.clk.handled()
		defer func() {
			if r := recover(); r != nil {
				s.run.panicked(fmt.Errorf("actor %s panicked on %T: %v\n%s", s.n.name, m.msg, r, debug.Stack()))
			}
		}()
		s.h.handle(m.msg)
	case *queryMsg:
		if q, ok := s.h.(querier); ok {
			ctx.Respond(q.query(m.q))
		} else {
			ctx.Respond(nil)
		}
	}
}

// queryMsg wraps an out-of-band query.
type queryMsg struct{ q any }

// waker keeps at most one useful timer pending for a core's NextEvent.
type waker struct {
	at  time.Duration
	has bool
}

type wakeMsg struct{ at time.Duration }

// fired must be called when a wakeMsg arrives.
func (w *waker) fired(m wakeMsg) {
	if w.has && m.at == w.at {
		w.has = false
	}
}

// ensure schedules a wake at `at` unless one at or before it is pending.
func (w *waker) ensure(n *node, at time.Duration, ok bool) {
	if !ok || (w.has && w.at <= at) {
		return
	}
	w.at, w.has = at, true
	n.send(n.self, wakeMsg{at: at}, at-n.now())
}

package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// scripted is a node that sends one message per call and asks for the
// wake-up it is told to.
type scripted struct {
	outbox
	wake time.Duration
	has  bool
}

func (n *scripted) Handle(now time.Duration, msg any) Ready {
	n.send(7, msg, 0)
	return n.ready(n.wake, n.has)
}

// TestHostWake: Host tracks the latest Wake it sent, sends a new one only
// when the node wants to wake earlier (or none is tracked), appends it
// after the node's own sends, and forgets it when it fires.
func TestHostWake(t *testing.T) {
	n := &scripted{}
	h := NewHost(n, 3)
	type step struct {
		now      time.Duration
		msg      any
		wake     time.Duration
		has      bool
		wantWake time.Duration // 0 = no Wake sent
	}
	for i, s := range []step{
		{now: 0, msg: "a", wake: 10, has: true, wantWake: 10},            // first wake
		{now: 1, msg: "b", wake: 12, has: true},                          // later than pending: nothing
		{now: 2, msg: "c", wake: 10, has: true},                          // same as pending: nothing
		{now: 3, msg: "d", wake: 5, has: true, wantWake: 5},              // earlier: a new Wake
		{now: 5, msg: &Wake{At: 5}, wake: 10, has: true, wantWake: 10},   // 5 fired; the Wake at 10 is no longer tracked
		{now: 10, msg: &Wake{At: 10}, wake: 20, has: true, wantWake: 20}, // 10 fired: a new one
		{now: 11, msg: &Wake{At: 10}, wake: 25, has: true},               // the forgotten Wake at 10 changes nothing
		{now: 12, msg: "e"}, // nothing wanted
	} {
		n.wake, n.has = s.wake, s.has
		out := h.Deliver(s.now, s.msg)
		assert.Equal(t, Envelope{To: 7, Msg: s.msg}, out[0], "step %d", i)
		if s.wantWake == 0 {
			assert.Len(t, out, 1, "step %d", i)
			continue
		}
		if assert.Len(t, out, 2, "step %d", i) {
			assert.Equal(t, Envelope{To: 3, Msg: &Wake{At: s.wantWake}, Delay: s.wantWake - s.now}, out[1], "step %d", i)
		}
	}
}

package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/pdemu/pdemu/cluster"
)

// sendOut queues a node's envelopes under one lock of the heap, with the
// keys Send would give them one by one (same order, same delivery).
// BenchmarkVirtualHop: a lock per envelope was the clock's largest cost
// per message after the mailbox's.
func (c *VirtualClock) sendOut(from int32, seq *uint64, pids []*actor.PID, out []cluster.Envelope) {
	if len(out) == 0 {
		return
	}
	now := c.Now()
	c.mu.Lock()
	for _, e := range out {
		*seq++
		d := max(e.Delay, 0)
		c.q.push(now+d, from, *seq, pids[e.To], e.Msg, d == 0)
	}
	c.mu.Unlock()
}

// sendOut sends a node's envelopes one by one (each may be due at once or
// on a timer; a stopped clock drops the rest).
func (c *WallClock) sendOut(from int32, seq *uint64, pids []*actor.PID, out []cluster.Envelope) {
	for _, e := range out {
		*seq++
		c.Send(from, *seq, pids[e.To], e.Msg, e.Delay)
	}
}

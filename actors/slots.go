package actors

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// Spawning a node's actor and stopping it again cost ~30 allocations
// (protoactor's props, context, registry entry, the stop's future and
// watch), ~300 per default-scenario run (13 % of BenchmarkReplay's
// allocations) and ~25k per run of 64 workers. A run on a pooled system
// therefore leaves its actors spawned, parked on the system, and the next
// run on that system seats its own shells in them (occupy): a slot is the
// actor protoactor knows, the shell it forwards to is the run's.
//
// Only a virtual run without faults parks its actors: when its clock
// returned, every message it delivered was handled, and no supervisor
// restart can still be under way (crashes only come from the fault
// schedule). A wall run, a run with faults or a run that panicked stops
// its actors as before.

// slot is a spawned actor; sh is the shell of the run occupying it (nil
// while parked).
type slot struct {
	sh      atomic.Pointer[shell]
	pid     *actor.PID
	virtual bool // its mailbox and dispatcher are the virtual clock's
}

func (a *slot) Receive(ctx actor.Context) {
	if s := a.sh.Load(); s != nil {
		s.Receive(ctx)
		return
	}
	if _, ok := ctx.Message().(*queryMsg); ok {
		ctx.Respond(nil)
	}
}

// maxParked bounds the actors a system keeps parked per clock kind (a
// 64-worker cluster has ~840; a 256P768D full mesh's 196,608 links are
// stopped rather than kept).
const maxParked = 4096

// park vacates slots and keeps up to maxParked of them on ps; it returns
// the ones it did not keep, for the caller to stop.
func (ps *pooledSystem) park(slots []*slot) (rest []*slot) {
	for _, a := range slots {
		a.sh.Store(nil) // the run's cluster is not kept alive by the pool
	}
	for i, a := range slots {
		k := 0
		if a.virtual {
			k = 1
		}
		if len(ps.parked[k]) >= maxParked {
			return slots[i:]
		}
		ps.parked[k] = append(ps.parked[k], a)
	}
	return nil
}

// unpark takes up to n parked actors of the clock's kind.
func (ps *pooledSystem) unpark(virtual bool, n int) []*slot {
	k := 0
	if virtual {
		k = 1
	}
	p := ps.parked[k]
	n = min(n, len(p))
	out := append([]*slot(nil), p[len(p)-n:]...)
	clear(p[len(p)-n:])
	ps.parked[k] = p[:len(p)-n]
	return out
}

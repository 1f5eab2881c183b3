package actors

import (
	"fmt"
	"reflect"
	"runtime/debug"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/pdemu/pdemu/cluster"
)

// shell is the one actor type: it runs one cluster node. It hands each
// message the clock delivered (fromClock) to the node's Host, sends what comes back
// through the clock (messages to cluster.RunAddr go to the run instead),
// reports the message as handled to the clock, and turns a panic into a
// run failure instead of a silent supervisor restart.
type shell struct {
	host cluster.Host // inside the shell: one allocation per node
	id   int32        // sender id for deterministic ordering
	seq  uint64       // this actor's send counter
	name string
	pids []*actor.PID // by cluster.Addr, shared by the run's shells
	clk  Clock
	run  *runState
	// restarts counts the supervisor's restarts of this actor (injected
	// crashes; supervise.go).
	restarts int
	kinds    kindCache
}

func (s *shell) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Restarting:
		s.restarts++
	case *queryMsg:
		// A barrier: once every actor answered, Run may read the nodes.
		ctx.Respond(nil)
	default:
		if s.kinds.fromClock(m) {
			s.deliver(m)
		}
	}
}

// deliver handles one message the clock delivered.
func (s *shell) deliver(msg any) {
	// One deferred call, not two (a deferred handled and a deferred
	// recover): handled is reported before an injected crash goes on to
	// the supervisor, as the two in stack order did.
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(injectedCrash); ok {
				s.clk.handled()
				panic(r) // to the supervisor, which restarts the actor
			}
			s.run.panicked(fmt.Errorf("actor %s panicked on %T: %v\n%s", s.name, msg, r, debug.Stack()))
		}
		s.clk.handled()
	}()
	// The envelopes go to the clock a run at a time (one lock per
	// delivery on the virtual clock, not one per envelope), each message
	// to the run reported where it stands in the order.
	out := s.host.Deliver(s.clk.Now(), msg)
	from := 0
	for i, e := range out {
		if e.To == cluster.RunAddr {
			s.clk.sendOut(s.id, &s.seq, s.pids, out[from:i])
			s.run.report(e.Msg)
			from = i + 1
		}
	}
	s.clk.sendOut(s.id, &s.seq, s.pids, out[from:])
	if c, ok := msg.(cluster.Crash); ok && c.Node {
		// The node has dropped its state (the cluster tier); the actor
		// fails like a crashed process.
		panic(injectedCrash{fault: c.Fault, actor: s.name})
	}
}

// fromClock reports whether an actor's message was delivered by a Clock:
// the clocks hand the nodes' messages to protoactor as they are, without
// an envelope (an envelope per message was an allocation per message on
// the wall clock), so this tells them from protoactor's own messages
// (lifecycle, system, mailbox and infrastructure messages), a barrier
// query and a nil future reply. The dead-letter watcher uses it too.
func fromClock(m any) bool {
	switch m.(type) {
	case nil, *queryMsg, actor.SystemMessage, actor.AutoReceiveMessage, actor.MailboxMessage,
		actor.InfrastructureMessage, actor.NotInfluenceReceiveTimeout, *actor.ReceiveTimeout:
		return false
	}
	return true
}

// kindCache is fromClock's verdict per message type, for the handful of
// types one node receives. fromClock's interface switch asks the runtime
// for each of its interfaces until the switch's own cache holds the type,
// which the runtime fills on one call in 1,024: a short run paid ~4 % of
// its CPU in getitab there (Mooncake 1P3D profile, 20 runs merged).
type kindCache struct {
	t  [16]reflect.Type
	ok [16]bool
	n  int
}

// fromClock is fromClock(m), from the cache once m's type was seen.
func (c *kindCache) fromClock(m any) bool {
	t := reflect.TypeOf(m)
	for i := range c.n {
		if c.t[i] == t {
			return c.ok[i]
		}
	}
	v := fromClock(m)
	if c.n < len(c.t) {
		c.t[c.n], c.ok[c.n] = t, v
		c.n++
	}
	return v
}

// queryMsg asks an actor to answer once it handled everything before it.
type queryMsg struct{}

// spawn starts one shell per node of cl; every shell resolves addresses
// through the returned PIDs, filled before the first message is sent.
func spawn(sys *actor.ActorSystem, cl *cluster.Cluster, clk Clock, rs *runState, virtual bool) []*actor.PID {
	pids, _ := spawnShells(sys, cl, clk, rs, virtual)
	return pids
}

// spawnShells is spawn that also returns the shells (for their restart
// counts). The shells are supervised by the guardian of supervision: an
// injected crash restarts the actor, anything else stops it.
func spawnShells(sys *actor.ActorSystem, cl *cluster.Cluster, clk Clock, rs *runState, virtual bool) ([]*actor.PID, []*shell) {
	pids, shells, _ := occupy(nil, sys, cl, clk, rs, virtual)
	return pids, shells
}

// occupy gives every node of cl a shell in an actor: one of ps's parked
// actors of the clock's kind while there are (ps nil: none), a new one
// for the rest (slots.go).
func occupy(ps *pooledSystem, sys *actor.ActorSystem, cl *cluster.Cluster, clk Clock, rs *runState, virtual bool) ([]*actor.PID, []*shell, []*slot) {
	var parked []*slot
	if ps != nil {
		parked = ps.unpark(virtual, len(cl.Nodes))
	}
	pids := make([]*actor.PID, len(cl.Nodes))
	shells := make([]*shell, len(cl.Nodes))
	slots := make([]*slot, len(cl.Nodes))
	var root *actor.RootContext
	var opts []actor.PropsOption
	for i, n := range cl.Nodes {
		sh := &shell{id: int32(i + 1), name: cl.Names[i], pids: pids, clk: clk, run: rs}
		sh.host.Init(n, cluster.Addr(i))
		shells[i] = sh
		if i < len(parked) {
			a := parked[i]
			a.sh.Store(sh)
			slots[i], pids[i] = a, a.pid
			continue
		}
		if root == nil {
			root = actor.NewRootContext(sys, nil).WithGuardian(supervision)
			// The mailbox makes no allocation per message (mailbox.go).
			opts = []actor.PropsOption{actor.WithMailbox(newMailbox)}
			if virtual {
				// In virtual time all messages of a step are delivered by the clock's
				// goroutine; running each mailbox on that goroutine (instead of a
				// fresh goroutine per mailbox activation) keeps delivery order and
				// saves the scheduling and stack growth, which dominated profiles.
				opts = []actor.PropsOption{actor.WithMailbox(newInlineMailbox),
					actor.WithDispatcher(actor.NewSynchronizedDispatcher(1024))}
			}
		}
		a := &slot{virtual: virtual}
		a.sh.Store(sh)
		// A restart incarnates the same slot, with the same shell: its
		// node already dropped its state, and its send counter keeps the
		// delivery order.
		a.pid = root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }, opts...))
		slots[i], pids[i] = a, a.pid
	}
	return pids, shells, slots
}

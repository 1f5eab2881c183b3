// Package actors runs a pdemu cluster (package cluster: pure nodes wired
// by address) as protoactor-go actors in emulated time. It is, with cmd/,
// the only package that imports protoactor.
//
// There is one actor type, shell: it hosts one cluster node, hands it each
// clock-delivered message through cluster.Host, and sends what the node
// returns (envelopes to addresses, resolved here to PIDs, and its Wake
// timer) through the run's Clock. Messages to cluster.RunAddr end the run
// or report progress instead. No actor holds state of its own or writes a
// gpu.Job; Run builds the cluster from the Spec, spawns one shell per
// node, runs the clock and summarises.
//
// All sends and timers go through one Clock:
//
//   - VirtualClock is a deterministic discrete-event clock (BSP): every
//     message is queued under the key (time, sender id, sender sequence);
//     the clock delivers all messages of the earliest time in key order from
//     one goroutine, waits until every actor has finished handling them (an
//     in-flight counter), then moves on. Each actor sees the same message
//     order in every run, so outputs are byte-identical across runs and
//     GOMAXPROCS values (and equal to cluster/clustertest's in-memory
//     network, which delivers in the same order without actors).
//   - WallClock runs in real time scaled by a factor S (an emulated delay d
//     fires after d/S of real time) and measures timer lateness.
//
// The clock's queue (vqueue.go) keeps the order in pointer-free keys, the
// messages in slots beside them, and takes a message sent with no delay
// (most of them) on a lane the next step sorts instead of through its
// heap. A virtual run without faults leaves its actors spawned on the
// pooled system (slots.go): the next run seats its shells in them instead
// of spawning and stopping ~30 allocations' worth of actor per node.
//
// Per message the runtime allocates nothing of its own: the clocks hand a
// node's message to protoactor as it is (no envelope; fromClock tells it
// from protoactor's own messages), and the shells' mailbox (mailbox.go)
// is protoactor's default one without its closure per activation. On the
// virtual clock the mailboxes run on the clock's goroutine (a
// synchronized dispatcher), so delivering a step hands no message to
// another goroutine, and a message to an idle mailbox is handled inside
// its Send without being queued. BenchmarkVirtualHop measures this
// runtime alone (nodes that only forward): its cost per message is the
// floor under every run's per-message figure.
//
// A server runs through the same Run (package served): Options.Wrap
// replaces nodes by wrappers before the actors are spawned,
// Options.Started hands out the run's Injector (the clock-safe way for
// other goroutines to send a node a message on the wall clock), and a
// negative Options.WallTimeout lets it run until its context is done.
// actors imports no serving code.
//
// Nothing is lost: every request that the driver releases ends exactly once
// at the collector, completed or failed with a reason; Run checks it. A run
// stopped early (its context cancelled, with a StopCause naming the signal,
// or a wall run past Options.WallTimeout) returns a *PartialError and a
// Result whose Unfinished lists every released request that had not ended,
// with where it was; Run checks released = ended + unfinished instead.
package actors

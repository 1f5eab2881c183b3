// Package actors runs pdemu's pure state machines (policy, gpu, transfer,
// workload) as protoactor-go actors in emulated time. It is, with cmd/, the
// only package that imports protoactor.
//
// Every actor is a thin adapter: it turns a message into a call on its pure
// core and the core's results into sends and timers. All sends and timers
// go through one Clock:
//
//   - VirtualClock is a deterministic discrete-event clock (BSP): every
//     message is queued under the key (time, sender id, sender sequence);
//     the clock delivers all messages of the earliest time in key order from
//     one goroutine, waits until every actor has finished handling them (an
//     in-flight counter), then moves on. Actors run in parallel within a
//     step but each sees the same message order in every run, so outputs
//     are byte-identical across runs and GOMAXPROCS values.
//   - WallClock runs in real time scaled by a factor S (an emulated delay d
//     fires after d/S of real time) and measures timer lateness.
//
// Nothing is lost: every request that the driver releases ends exactly once
// at the collector, completed or failed with a reason; Run checks it.
package actors

// Package cluster is the pure tier between pdemu's state-machine cores
// (gpu workers, transfer NICs, the workload driver, the routing policies)
// and the actor runtime, in the manner of etcd-io/raft's core / RawNode /
// node tiers: the cores compute, this package wires them into a cluster of
// nodes that exchange messages, and actors/ only delivers the messages.
//
// Contract:
//
//   - A Node handles one message at an emulated time (Handle(now, msg))
//     and returns a Ready: the messages to send, each to an Addr after an
//     emulated delay, and the node's next wake-up. Nothing here imports
//     protoactor, reads the wall clock, sleeps or starts a goroutine.
//   - Addresses are indexes into Cluster.Nodes; Build wires every node by
//     address from a topology.Spec before anything runs.
//   - Host is the one drive loop of a node, shared by every runtime: it
//     delivers a message and turns the node's wake-up into a Wake to
//     itself (at most one useful Wake pending).
//   - Every write to a gpu.Job outside the gpu cores happens in this
//     package's nodes. A Job is owned by one node at a time and handed over
//     in messages (the Owner column below).
//   - Determinism: a runtime that delivers all messages of the earliest
//     emulated time in (time, sender address, sender sequence) order, one
//     time step after another, gets the same results from every run.
//   - The run itself has the address RunAddr: Failed, Done and Progress go
//     there.
//   - Observation for the outputs changes no behaviour and is read after
//     the run, once the runtime stopped delivering: Cluster.InFlight (the
//     jobs released but not ended, for a partial run), Links (each NIC's
//     load after every link event), RouterEvents (the P/D router's
//     migrations, blacklists, Fallbacks, rejections) and RouteLog (the P/D
//     router's tries and candidates per request; KVC explains its route
//     only then, so Route pays nothing for it).
//
// # Protocol
//
// The table is Protocol, rendered by TestProtocolDoc (go test ./cluster
// -run TestProtocolDoc -update rewrites it); TestProtocolWalk checks that
// the nodes send exactly these hops.
//
// The table, row by row:
//
//	 message      | sender → receiver  | payload                                                                            | Job owner afterwards
//	--------------+--------------------+------------------------------------------------------------------------------------+-------------------------------------------------
//	 Start        | run → driver       | —                                                                                  | -
//	 Release      | driver → driver    | request (timer at its release time)                                                | -
//	 Release      | run → driver       | request from outside, released now (open-ended runs)                               | -
//	 EndOfInput   | run → driver       | — (open-ended runs: no more requests from outside)                                 | -
//	 Abort        | run → decode       | request id whose client went away (served runs)                                    | -
//	 AbortDone    | run → decode       | request id that ended: forget its Abort                                            | -
//	 Abort        | run → bucket       | request id whose client went away (served runs)                                    | -
//	 AbortDone    | run → bucket       | request id that ended: forget its Abort                                            | -
//	 NewJob       | driver → router    | new Job (P = D = -1, Arrival set)                                                  | router
//	 NewJob       | driver → global    | new Job                                                                            | global router
//	 DriverDone   | driver → collector | requests released in total                                                         | -
//	 Failed       | driver → run       | trace error                                                                        | -
//	 Admit        | router → decode    | Job, dispatch state                                                                | decode worker (until it replies)
//	 AdmitReply   | decode → router    | Job, dispatch, mode or rejection reason                                            | router (Direct: decode worker keeps running it)
//	 Prefill      | router → prefill   | Job with Mode, P, D set                                                            | prefill worker
//	 RunJob       | router → decode    | Job to run Direct without admission                                                | decode worker
//	 Transfer     | prefill → link     | prefilled Job                                                                      | link
//	 KVReady      | link → decode      | Job with its transfer timeline (or failure)                                        | decode worker
//	 Finished     | decode → router    | decode index                                                                       | -
//	 *Evicted     | decode → router    | decode index, session, time, cause, request                                        | -
//	 JobEnded     | decode → collector | ended Job                                                                          | collector
//	 SyncReq      | decode → prefill   | D→P sync: session, blocks, KV tokens (dp_sync)                                     | -
//	 SyncXfer     | prefill → link     | D→P sync to put on the wire                                                        | -
//	 SyncDone     | link → prefill     | D→P sync landed: the backup advances                                               | -
//	 ViewReq      | global → bucket    | Job (read only: the global router keeps it)                                        | global router
//	 ViewResp     | bucket → global    | request id, BucketView                                                             | -
//	 Assign       | global → bucket    | Job, global decision                                                               | bucket
//	 JobEnded     | global → collector | Job failed: no bucket, or longer than the context                                  | collector
//	 Submit       | bucket → bucket    | Job, instance (timer: probe latency)                                               | bucket
//	 JobEnded     | bucket → collector | ended Job                                                                          | collector
//	 RequestEnded | collector → driver | request                                                                            | -
//	 *Progress    | collector → run    | requests ended, emulated time                                                      | -
//	 Done         | collector → run    | —                                                                                  | -
//	 Failed       | collector → run    | record error                                                                       | -
//	 InjectTick   | driver → driver    | — (timer: the schedule's next actions, at most 1 s ahead)                          | -
//	 Crash        | driver → decode    | fault id (timer: the crash time)                                                   | -
//	 Crash        | driver → prefill   | fault id (timer: the crash time)                                                   | -
//	 Restart      | driver → decode    | fault id (timer: the restart time)                                                 | -
//	 Restart      | driver → prefill   | fault id (timer: the restart time)                                                 | -
//	 Slowdown     | driver → decode    | fault id, factor (timer; factor 1 ends it)                                         | -
//	 Slowdown     | driver → prefill   | fault id, factor (timer; factor 1 ends it)                                         | -
//	 Health       | driver → router    | node or link down/up (timer: fault or end + detection delay)                       | -
//	 Health       | driver → prefill   | node or link down/up (timer: fault or end + detection delay)                       | -
//	 Retry        | decode → router    | Job hit by a fault (Failed, FaultHit set)                                          | router
//	 Retry        | prefill → router   | Job hit by a fault (Failed, FaultHit set)                                          | router
//	 Retry        | router → router    | Job that found no healthy decode worker (timer: detection delay)                   | router
//	 KVReady      | prefill → decode   | Job its prefill worker cannot serve (Failed set): the reservation is released      | decode worker
//	 KVReady      | router → decode    | admitted Job no prefill worker can reach (Failed set): the reservation is released | decode worker
//	 JobEnded     | router → collector | Job failed: retry budget spent, longer than the context, or larger than any pool   | collector
//	 Crash        | driver → bucket    | fault id: an instance or the whole bucket (timer)                                  | -
//	 Restart      | driver → bucket    | fault id (timer)                                                                   | -
//	 Slowdown     | driver → bucket    | fault id, factor (timer)                                                           | -
//	 Health       | driver → bucket    | instance down/up (timer: + detection delay)                                        | -
//	 Health       | driver → global    | bucket down/up (timer: + detection delay)                                          | -
//	 Retry        | bucket → global    | Job hit by a fault                                                                 | global router
//	 Retry        | global → global    | Job whose bucket is down (timer: detection delay)                                  | global router
//	 *Wake        | decode → decode    | wake time (timer)                                                                  | -
//	 *Wake        | prefill → prefill  | wake time (timer)                                                                  | -
//	 *Wake        | link → link        | wake time (timer)                                                                  | -
//	 *Wake        | bucket → bucket    | wake time (timer)                                                                  | -
//
// # Policies
//
// Registry is the one table of routing policy constructors (P/D router,
// bucket local router, global router); TestRegistryMatchesHCL checks it
// against the names topology accepts.
//
// # Files
//
// One node per file, its fault half beside it: driver.go (the driver and
// the fault injector), router.go and router_faults.go (the P/D router),
// decode.go, prefill.go, link.go, collector.go, global.go (the fused
// global router), bucket.go and bucket_faults.go. faults.go keeps what
// the nodes share (the fault messages, the schedule, the slowed cost
// model), health.go the routers' view of what is down, faults_records.go
// the faults.csv records and the wiring of fault state at Build.
//
// docs/CONTRIBUTING.md has the recipe for adding a node message or a fault kind: the files to
// touch, in order, and the test that proves it.
package cluster

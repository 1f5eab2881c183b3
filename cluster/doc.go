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
//
// # Protocol
//
// The table is Protocol, rendered by TestProtocolDoc (go test ./cluster
// -run TestProtocolDoc -update rewrites it); TestProtocolWalk checks that
// the nodes send exactly these hops.
//
// BEGIN PROTOCOL
// END PROTOCOL
//
// # Policies
//
// Registry is the one table of routing policy constructors (P/D router,
// bucket local router, global router); TestRegistryMatchesHCL checks it
// against the names topology accepts.
package cluster

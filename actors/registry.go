package actors

import cmap "github.com/orcaman/concurrent-map"

// protoactor's process registry is 1024 concurrent maps of
// cmap.SHARD_COUNT shards each, built by every NewActorSystem: at the
// default 32 shards, 32768 Go maps and as many locks, ~3 ms and ~70k
// allocations per system, the bulk of a short run's start (perf of the
// Mooncake 1P3D run: 4 % of its CPU). The registry already spreads its
// PIDs over its 1024 maps by a hash of their id, so one shard per map
// keeps the locks as fine-grained as a run needs (a run registers its
// few dozen actors once; sends go through the PID's cached process, not
// the registry).
//
// SHARD_COUNT is read by every cmap operation, so it must not change once
// a map holds entries: it is set here, in package initialization, before
// any actor system exists (protoactor builds none at its own init), and
// protoactor's registry is the binary's only user of cmap.
func init() { cmap.SHARD_COUNT = 1 }

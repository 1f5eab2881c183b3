// Package effect defines Ready, the one shape in which pdemu's pure state
// machines (the gpu worker cores, the transfer NIC, the workload driver and
// the cluster nodes built on them) hand back what a call made happen.
//
// The pattern is etcd-io/raft's Ready: a machine takes inputs through its
// own methods (Submit, Arrive, Start, Advance, Handle, ...) and accumulates
// their effects; Ready returns them, in the order they happened, with the
// emulated time at which the machine next wants to be advanced, and clears
// them. The returned Out slice is owned by the machine and reused: it is
// valid until the next call on the same machine, so hot paths allocate
// nothing.
//
// Stamp is the other half of the contract, on the runners' side: the
// order (due time, sender, sender's send counter) in which every
// virtual-time runner delivers the messages the machines send.
package effect

import "time"

// Ready is what a pure state machine did since its last Ready: the outputs
// Out (jobs that finished a phase, completions, releases, messages) in
// order, and Wake, the emulated time at which it must next be advanced
// when HasWake is set (nothing is pending otherwise).
type Ready[T any] struct {
	Out     []T
	Wake    time.Duration
	HasWake bool
}

// Take returns the Ready made of *out and the wake-up (at, ok), and empties
// *out for reuse (its backing array is kept: Out is valid until the next
// Take on the same slice).
func Take[T any](out *[]T, at time.Duration, ok bool) Ready[T] {
	r := Ready[T]{Out: *out, Wake: at, HasWake: ok}
	*out = (*out)[:0]
	return r
}

package policy

import (
	"github.com/pdemu/pdemu/internal/freelist"
	"github.com/pdemu/pdemu/workload"
)

// Action is what a router must do next for a request.
type Action uint8

// Actions.
const (
	// ActNone: nothing more to do (Direct: the decode worker that admitted
	// the request runs it).
	ActNone Action = iota
	// ActAdmit: ask decode worker D for admission (Algorithm 2 RPC).
	ActAdmit
	// ActPrefill: prefill on P, move the KV to D, decode on D, in Mode.
	ActPrefill
	// ActRun: send the request to worker D, which runs it without an
	// admission check: a decode worker serves it Direct (append-prefill
	// over whatever KV of the session it holds, the whole prompt if none),
	// a fused worker (Mode == ModeFused) runs prefill and decode itself.
	// Only the admission-free baselines (StickyOnly, KVScore, CacheAwareDP)
	// return it.
	ActRun
)

// Step is a policy's instruction to the router actor.
type Step struct {
	Action Action
	P, D   int
	Mode   Mode
	// Unadmitted is set when no worker admitted the request (Fallback,
	// Vanilla and the admission-free baselines): the worker must reserve
	// its KV when the request (or its KV) arrives, waiting for room.
	Unadmitted bool
}

// Dispatch is the per-request state of Algorithm 3 (retries, tried set).
//
// A Dispatch is used for one request and never reset: Reasons may be
// kept by the request's Job (and its record) after routing, and its first
// elements live inside the Dispatch, so a Dispatch must not be reused or
// zeroed while anything can still read its Reasons. Dispatches is the
// allocation-saving way to make many.
type Dispatch struct {
	Req     *workload.Request
	Tries   int      // admission attempts so far (retries)
	Reasons []string // rejection reasons in order; nil if none
	tried   []uint64 // bitset of decode workers already tried

	// Inline backing arrays for Reasons and tried: most requests see a
	// few rejections among at most 64 decode workers, so neither needs an
	// allocation of its own.
	reasons0 [inlineReasons]string
	tried0   [1]uint64
}

// inlineReasons is how many rejection reasons fit in a Dispatch before
// Reasons moves to an allocated array.
const inlineReasons = 4

// NewDispatch starts dispatching r.
func NewDispatch(r *workload.Request) *Dispatch { return &Dispatch{Req: r} }

// Dispatches hands out Dispatches allocated dispatchSlab at a time (one
// allocation per request was a replay's second-largest share), and
// Recycled ones first. It is not safe for concurrent use; the zero value
// is ready.
type Dispatches struct {
	free  []Dispatch
	spare []*Dispatch // Recycled
}

const dispatchSlab = 64

// New is NewDispatch from a slab (or a Recycled Dispatch). A slab stays
// in memory while any of its Dispatches (or Reasons slices into them) is
// referenced; a Dispatch is never handed out twice unless Recycled.
func (p *Dispatches) New(r *workload.Request) *Dispatch {
	if ds, ok := freelist.Pop(&p.spare); ok {
		ds.Req = r
		return ds
	}
	if len(p.free) == 0 {
		p.free = make([]Dispatch, dispatchSlab)
	}
	ds := &p.free[0]
	p.free = p.free[1:]
	ds.Req = r
	return ds
}

// Recycle gives ds back for a later New: the caller and the policy are
// done with it (its request's routing ended; policies keep no Dispatch
// past the Step that ends it). A Dispatch with Reasons is kept as it is
// (a Job may hold them): only one no worker rejected is reused.
func (p *Dispatches) Recycle(ds *Dispatch) {
	if ds.Reasons != nil {
		return
	}
	*ds = Dispatch{}
	p.spare = append(p.spare, ds)
}

func (ds *Dispatch) wasTried(d int) bool {
	w := d >> 6
	return w < len(ds.tried) && ds.tried[w]&(1<<(uint(d)&63)) != 0
}

func (ds *Dispatch) markTried(d int) {
	if ds.tried == nil {
		ds.tried = ds.tried0[:]
	}
	for len(ds.tried) <= d>>6 {
		ds.tried = append(ds.tried, 0)
	}
	ds.tried[d>>6] |= 1 << (uint(d) & 63)
}

// addReason appends a rejection reason, first into the inline array.
func (ds *Dispatch) addReason(reason string) {
	if ds.Reasons == nil {
		ds.Reasons = ds.reasons0[:0]
	}
	ds.Reasons = append(ds.Reasons, reason)
}

// Package transfer models KV-cache transfers from prefill to decode workers
// over NICs (RDMA via the Mooncake transfer engine, or TCP) with processor
// sharing.
//
// Contract:
//
//   - A NIC is a pure, deterministic state machine driven by explicit
//     emulated times (`now`, a time.Duration since the start of the run). It
//     never reads the wall clock, sleeps, starts goroutines or imports the
//     actor runtime; a run is a function of its call sequence. It is not safe
//     for concurrent use: an actor owns it.
//   - Times passed to Start, Advance, Degrade, Cut and Restore must never be
//     before the latest time passed to Start or Advance (violations panic).
//   - A transfer first spends the NIC's fixed cost (Latency + Setup) without
//     using bandwidth, then joins the sharing pool. Pool members share the
//     effective bandwidth min(Efficiency·LineRate, MaxRate)·degradation by
//     max-min fairness (water-filling): each gets the equal share, except
//     that a transfer with a rate cap below the share gets its cap and the
//     surplus goes to the others. Any state change (a join, a completion, a
//     degradation) recomputes the shares of the remaining transfers.
//   - Progress is analytic between state changes (no per-byte or per-tick
//     events). Completion times are whole nanoseconds rounded up (values
//     within 1e-12 relative floating-point noise of a whole nanosecond are
//     taken as exact), so a transfer never finishes before the fluid model
//     says it can, and a transfer whose share drops never finishes earlier
//     than previously predicted. A transfer still holds its share during
//     the sub-nanosecond rounding gap.
//   - Ready (an effect.Ready) returns the completions Advance collected, in
//     (At, ID) order, with NextEvent as the wake-up; At never decreases
//     across calls. Events at the same instant are processed as:
//     completions, then joins (a zero-byte transfer joining at t completes
//     at t), then scheduled degrade/cut/restore in call order; so a transfer
//     due exactly at the cut time succeeds. Shares, tie-breaks and float
//     sums do not depend on the order of Starts at one instant, so results
//     are a function of the inputs only.
//   - A cut NIC fails every in-flight transfer (in fixed phase or pool) at
//     the cut time with an error that matches ErrCut; a transfer started
//     while the NIC is cut fails at its start time.
//   - NextEvent reports the earliest time at which the NIC's state can
//     change (a completion, the end of a fixed phase, or a scheduled
//     degrade/cut/restore); calling Advance at that time is always safe and
//     calling it at other times changes nothing.
//   - Advance and Ready do not allocate once the NIC's completion buffer
//     has grown to the largest batch (Ready's Out is reused: it is valid
//     until the next call on the NIC).
package transfer

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pdemu/pdemu/effect"
)

// ErrCut is matched (errors.Is) by the Err of every transfer that failed
// because its NIC was cut.
var ErrCut = errors.New("transfer: NIC cut")

// CutError is the error of a transfer that failed because NIC was cut. It
// matches ErrCut.
type CutError struct {
	// NIC is the name of the cut NIC.
	NIC string
}

// Error implements error.
func (e *CutError) Error() string { return fmt.Sprintf("transfer: NIC %q cut", e.NIC) }

// Is reports whether target is ErrCut.
func (e *CutError) Is(target error) bool { return target == ErrCut }

// Completion reports the end of a transfer.
type Completion struct {
	// ID is the id passed to Start.
	ID uint64
	// At is the emulated time the last byte arrived (or the failure time).
	At time.Duration
	// Err is nil on success; it matches ErrCut when the NIC was cut.
	Err error
}

// xfer is one in-flight transfer.
type xfer struct {
	id        uint64
	bytes     int64
	cap       float64       // bytes/s; +Inf when uncapped
	joinAt    time.Duration // end of the fixed phase
	pooled    bool          // in the sharing pool
	remaining float64       // bytes left, as of NIC.t (pooled only)
	rate      float64       // current share in bytes/s (pooled only)
	finishAt  time.Duration // predicted completion at the current rate
}

type changeKind uint8

const (
	kindDegrade changeKind = iota + 1
	kindCut
	kindRestore
)

// change is a scheduled degrade/cut/restore.
type change struct {
	at     time.Duration
	kind   changeKind
	factor float64
}

// NIC is one network interface carrying KV transfers under processor
// sharing. Create it with NewNIC.
type NIC struct {
	cfg    Config // with defaults applied
	base   float64
	fixed  time.Duration
	cutErr error

	factor float64 // cumulative degradation
	cut    bool

	now time.Duration // latest time seen
	t   time.Duration // time at which pooled remaining values are exact

	xs      []xfer
	nextTx  time.Duration // cached nextTransferEvent()
	pending []Completion  // produced by Start's catch-up, delivered by Advance
	done    []Completion  // collected by Advance, returned by Ready
	sched   []change      // sorted by at, then insertion order
	order   []int32       // scratch for water-filling
}

// NewNIC validates cfg and returns an idle NIC at time 0.
func NewNIC(cfg Config) (*NIC, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	return &NIC{
		cfg:    c,
		base:   c.EffectiveRate(),
		fixed:  c.FixedCost(),
		cutErr: &CutError{NIC: c.Name},
		factor: 1,
		nextTx: never,
	}, nil
}

// Config returns the NIC's configuration with transport defaults applied.
func (n *NIC) Config() Config { return n.cfg }

// Bandwidth returns the effective bandwidth in bytes/s as of the latest
// processed time: min(Efficiency·LineRate, MaxRate) times the degradation
// factor, 0 when cut.
func (n *NIC) Bandwidth() float64 {
	if n.cut {
		return 0
	}
	return n.base * n.factor
}

// Active returns the number of in-flight transfers (fixed phase or pool)
// as of the latest time passed to Start or Advance.
func (n *NIC) Active() int { return len(n.xs) }

// Estimate returns the time an isolated transfer of bytes takes on this NIC
// when healthy (see the package-level Estimate).
func (n *NIC) Estimate(bytes int64) time.Duration { return Estimate(n.cfg, bytes) }

func (n *NIC) checkTime(op string, now time.Duration) {
	if now < n.now {
		panic(fmt.Sprintf("transfer: NIC %q: %s at %v before latest time %v", n.cfg.Name, op, now, n.now))
	}
}

// Start begins transfer id of bytes at now. rateCap limits its share in
// bytes/s (0 or +Inf: none). id must not belong to a transfer still in
// flight at now (it may be reused once that one has completed). If
// the NIC is cut at now the transfer fails at now (reported by the next
// Advance). Start panics on time going backwards, negative bytes, an invalid
// cap or a duplicate active id.
func (n *NIC) Start(now time.Duration, id uint64, bytes int64, rateCap float64) {
	n.checkTime("Start", now)
	if bytes < 0 {
		panic(fmt.Sprintf("transfer: NIC %q: Start(%d): negative bytes %d", n.cfg.Name, id, bytes))
	}
	if !(rateCap >= 0) {
		panic(fmt.Sprintf("transfer: NIC %q: Start(%d): invalid rate cap %g", n.cfg.Name, id, rateCap))
	}
	n.pending = n.advanceTo(now, n.pending)
	for i := range n.xs {
		if n.xs[i].id == id {
			panic(fmt.Sprintf("transfer: NIC %q: Start: id %d already active at %v", n.cfg.Name, id, now))
		}
	}
	if n.cut {
		n.pending = append(n.pending, Completion{ID: id, At: now, Err: n.cutErr})
		return
	}
	if rateCap == 0 {
		rateCap = math.Inf(1)
	}
	// The fixed cost is at least 1 ns (Setup 0 selects a positive
	// default), so the transfer always starts in its fixed phase.
	x := xfer{id: id, bytes: bytes, cap: rateCap, joinAt: addSat(now, n.fixed), finishAt: never}
	n.xs = append(n.xs, x)
	n.nextTx = min(n.nextTx, x.joinAt)
}

// Advance processes everything that happens up to and including now;
// Ready returns the transfers that ended (successfully or not) at or before
// now, in (At, ID) order. now must not decrease between calls.
func (n *NIC) Advance(now time.Duration) {
	n.checkTime("Advance", now)
	start := len(n.done)
	n.done = append(n.done, n.pending...)
	n.pending = n.pending[:0]
	n.done = n.advanceTo(now, n.done)
	if len(n.done)-start > 1 {
		slices.SortFunc(n.done[start:], cmpCompletion)
	}
}

// Ready returns and clears the completions Advance collected since the
// last call, with NextEvent as its wake-up. Out is reused: consume it
// before the next call on the NIC.
func (n *NIC) Ready() effect.Ready[Completion] {
	at, ok := n.NextEvent()
	return effect.Take(&n.done, at, ok)
}

// cmpCompletion orders completions by time, then id.
func cmpCompletion(a, b Completion) int {
	return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.ID, b.ID))
}

// NextEvent returns the earliest time at which the NIC's state can change
// given the current sharing: a completion, the end of a transfer's fixed
// phase, or a scheduled degrade/cut/restore. If completions are waiting to
// be collected (produced while Start caught up to its now), it returns the
// latest time passed to Start or Advance: call Advance then. ok is false
// when nothing will ever happen.
func (n *NIC) NextEvent() (at time.Duration, ok bool) {
	if len(n.pending) > 0 {
		return n.now, true
	}
	at = n.nextTx
	if len(n.sched) > 0 {
		at = min(at, n.sched[0].at)
	}
	return at, at != never
}

// Degrade multiplies the effective bandwidth by factor (0 < factor <= 1)
// from at on; degradations compound until Restore. Transfers in flight at
// at slow down accordingly. It panics on an invalid factor or an at before
// the latest time.
func (n *NIC) Degrade(at time.Duration, factor float64) {
	n.checkTime("Degrade", at)
	if !(factor > 0 && factor <= 1) {
		panic(fmt.Sprintf("transfer: NIC %q: Degrade: factor %g not in (0, 1]", n.cfg.Name, factor))
	}
	n.schedule(change{at: at, kind: kindDegrade, factor: factor})
}

// Cut stops all traffic from at on: transfers in flight at at fail at at,
// and transfers started while cut fail at their start time. Completions due
// exactly at at still succeed. It panics on an at before the latest time.
func (n *NIC) Cut(at time.Duration) {
	n.checkTime("Cut", at)
	n.schedule(change{at: at, kind: kindCut})
}

// Restore ends a cut and any degradation from at on (failed transfers stay
// failed). This method is an addition to the original API, for link-flap
// experiments. It panics on an at before the latest time.
func (n *NIC) Restore(at time.Duration) {
	n.checkTime("Restore", at)
	n.schedule(change{at: at, kind: kindRestore})
}

// schedule inserts c after every change at or before c.at.
func (n *NIC) schedule(c change) {
	i := len(n.sched)
	for i > 0 && n.sched[i-1].at > c.at {
		i--
	}
	n.sched = slices.Insert(n.sched, i, c)
}

// nextTransferEvent returns the earliest completion or join, or never, by
// scanning; n.nextTx caches it between state changes.
func (n *NIC) nextTransferEvent() time.Duration {
	at := never
	for i := range n.xs {
		x := &n.xs[i]
		if x.pooled {
			at = min(at, x.finishAt)
		} else {
			at = min(at, x.joinAt)
		}
	}
	return at
}

// advanceTo processes all events at or before now, appending completions to
// dst.
func (n *NIC) advanceTo(now time.Duration, dst []Completion) []Completion {
	for {
		tx := n.nextTx
		ts := never
		if len(n.sched) > 0 {
			ts = n.sched[0].at
		}
		switch {
		case tx != never && tx <= now && tx <= ts:
			dst = n.stepTransfers(tx, dst)
		case len(n.sched) > 0 && ts <= now:
			dst = n.applyChange(dst)
		default:
			n.now = now
			return dst
		}
	}
}

// progress brings pooled remaining bytes to time t.
func (n *NIC) progress(t time.Duration) {
	if t <= n.t {
		return
	}
	dt := float64(t-n.t) * 1e-9
	for i := range n.xs {
		x := &n.xs[i]
		if x.pooled {
			x.remaining -= x.rate * dt
		}
	}
	n.t = t
}

// stepTransfers completes the transfers due at te and joins those whose
// fixed phase ends at te, then reshares.
func (n *NIC) stepTransfers(te time.Duration, dst []Completion) []Completion {
	n.progress(te)
	w := 0
	for i := range n.xs {
		x := n.xs[i]
		switch {
		case x.pooled && x.finishAt <= te:
			dst = append(dst, Completion{ID: x.id, At: te})
			continue
		case !x.pooled && x.joinAt <= te:
			x.pooled = true
			x.remaining = float64(x.bytes)
			x.rate = 0
			x.finishAt = never
		}
		n.xs[w] = x
		w++
	}
	n.xs = n.xs[:w]
	n.reshare()
	n.nextTx = n.nextTransferEvent()
	return dst
}

// applyChange applies the earliest scheduled change.
func (n *NIC) applyChange(dst []Completion) []Completion {
	c := n.sched[0]
	n.sched = slices.Delete(n.sched, 0, 1)
	n.progress(c.at)
	switch c.kind {
	case kindDegrade:
		n.factor *= c.factor
	case kindCut:
		if !n.cut {
			for i := range n.xs {
				dst = append(dst, Completion{ID: n.xs[i].id, At: c.at, Err: n.cutErr})
			}
			n.xs = n.xs[:0]
			n.cut = true
		}
	case kindRestore:
		n.factor = 1
		n.cut = false
	}
	n.reshare()
	n.nextTx = n.nextTransferEvent()
	return dst
}

// reshare recomputes the max-min fair (water-filling) shares of the pool
// at time n.t and the predicted completion times of transfers whose share
// changed.
func (n *NIC) reshare() {
	if n.cut {
		return
	}
	capacity := n.base * n.factor
	k := 0
	minCap := math.Inf(1)
	for i := range n.xs {
		if n.xs[i].pooled {
			k++
			minCap = min(minCap, n.xs[i].cap)
		}
	}
	if k == 0 {
		return
	}
	level := capacity / float64(k)
	if minCap < level {
		level = n.waterLevel(capacity)
	}
	for i := range n.xs {
		x := &n.xs[i]
		if !x.pooled {
			continue
		}
		r := min(x.cap, level)
		if r == x.rate {
			continue // unchanged share: keep the prediction as is
		}
		f := addSat(n.t, ceilNs(x.remaining, r))
		if r < x.rate && f < x.finishAt {
			f = x.finishAt // a smaller share never finishes earlier
		}
		x.rate, x.finishAt = r, f
	}
}

// waterLevel returns the share of uncapped (or loosely capped) pool members
// when capped members below the level get their caps.
func (n *NIC) waterLevel(capacity float64) float64 {
	n.order = n.order[:0]
	for i := range n.xs {
		if n.xs[i].pooled {
			n.order = append(n.order, int32(i))
		}
	}
	xs := n.xs
	slices.SortFunc(n.order, func(a, b int32) int { // by cap, then id (Start refuses a NaN cap)
		xa, xb := &xs[a], &xs[b]
		return cmp.Or(cmp.Compare(xa.cap, xb.cap), cmp.Compare(xa.id, xb.id))
	})
	left := capacity
	k := len(n.order)
	for _, i := range n.order {
		c := n.xs[i].cap
		if c*float64(k) >= left {
			break
		}
		left -= c
		k--
	}
	if k == 0 {
		return math.Inf(1) // every member is capped below its share
	}
	return left / float64(k)
}

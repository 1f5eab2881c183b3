package metrics

import "time"

// Recovery windows computed as the records come (Tally, Recover).
//
// A fault's recovery (FaultRecord.Recovery, Recover) reads the completed
// requests by arrival in slots of RecoveryWindow/10 aligned on the fault:
// the ten slots before it give the pre-fault level, and each window of
// ten consecutive slots from the fault on is compared with that level. A
// slot is final once every request that arrived before its end has ended:
// the watermark (recovery.watermark, fed by the Collector from the
// driver's release order, releaseMark). A fault keeps the slots from its
// first window not judged yet to the latest arrival, and of the windows
// judged only the last one below the level: its memory is the slots
// between the watermark and the latest arrival (a few per second of
// requests in flight), not the requests. Without a watermark (TallyOf,
// Recover) it keeps every slot after the fault, and judges at the end.
//
// The result is Recover's exactly: the same slots, counts and
// comparisons; the TTFT sums are exact integers (nanoseconds) where
// Recover once summed float64s in arrival order, which is the same value
// while a window's TTFTs sum to less than 2^53 ns (104 days).

const (
	recoverySlot    = RecoveryWindow / 10
	recoveryPerWind = 10 // slots per window
)

// slotSum is what a slot (or a window) counts of its completed requests.
type slotSum struct {
	n, direct int32
	ttft      int64 // ns
}

func (s *slotSum) plus(o slotSum) { s.n, s.direct, s.ttft = s.n+o.n, s.direct+o.direct, s.ttft+o.ttft }

// level is the Direct share and the mean TTFT of s (s.n > 0).
func (s slotSum) level() (share, ttft float64) {
	return float64(s.direct) / float64(s.n), float64(s.ttft) / float64(s.n)
}

// faultRecovery is one fault time's recovery state.
type faultRecovery struct {
	at      time.Duration
	base    int // slot index (from at, in slots) of slots[0]
	slots   []slotSum
	pre     slotSum // the pre-fault level, once judged (preDone)
	preDone bool
	none    bool // no completed request before the fault: Recovery 0, nothing kept
	next    int  // the first window (slot index of its start) not judged
	below   int  // the last window judged below the level; -1: none
}

// recovery is the recovery state of a run's fault times.
type recovery struct {
	faults []*faultRecovery // by at, distinct
	last   time.Duration    // the latest arrival added (any state)
}

// newRecovery tracks the recovery of faults at the times ats (any order,
// duplicates allowed); nil without any.
func newRecovery(ats []time.Duration) *recovery {
	if len(ats) == 0 {
		return nil
	}
	r := &recovery{}
	for _, at := range ats {
		if r.of(at) == nil {
			r.faults = append(r.faults, &faultRecovery{at: at, base: -recoveryPerWind, below: -1})
		}
	}
	for i := 1; i < len(r.faults); i++ { // a handful of faults: insertion sort
		for j := i; j > 0 && r.faults[j].at < r.faults[j-1].at; j-- {
			r.faults[j], r.faults[j-1] = r.faults[j-1], r.faults[j]
		}
	}
	return r
}

func (r *recovery) of(at time.Duration) *faultRecovery {
	for _, f := range r.faults {
		if f.at == at {
			return f
		}
	}
	return nil
}

// slotOf is the slot (from a fault at 0) of an arrival d after it: floor.
func slotOf(d time.Duration) int {
	q := d / recoverySlot
	if d%recoverySlot < 0 {
		q--
	}
	return int(q)
}

// add counts an ended request (any state but unfinished).
func (r *recovery) add(row RecoverRow) {
	r.last = max(r.last, row.Arrival)
	if row.Failed {
		return
	}
	s := slotSum{n: 1, ttft: int64(row.TTFT)}
	if row.Direct {
		s.direct = 1
	}
	for _, f := range r.faults {
		j := slotOf(row.Arrival - f.at)
		if j < -recoveryPerWind {
			break // before this fault's level, and every later fault's
		}
		if f.none || j < f.base {
			continue // judged already (the watermark said nothing arrives there any more)
		}
		for j-f.base >= len(f.slots) {
			f.slots = append(f.slots, slotSum{})
		}
		f.slots[j-f.base].plus(s)
	}
}

// watermark judges what is final once every request that arrived before w
// has been added, and drops the slots no window still needs.
func (r *recovery) watermark(w time.Duration) {
	for _, f := range r.faults {
		f.judge(w)
	}
}

// sum counts slots [lo, hi) (those dropped or never reached count 0).
func (f *faultRecovery) sum(lo, hi int) slotSum {
	var s slotSum
	for j := max(lo, f.base); j < hi && j-f.base < len(f.slots); j++ {
		s.plus(f.slots[j-f.base])
	}
	return s
}

// isBelow reports whether window s is below the pre-fault level pre.
func isBelow(pre, s slotSum) bool {
	share0, ttft0 := pre.level()
	share, ttft := s.level()
	return !(share >= RecoveryShare*share0 && ttft <= RecoveryTTFT*ttft0)
}

func (f *faultRecovery) judge(w time.Duration) {
	if f.none || w < f.at {
		return
	}
	if !f.preDone {
		f.pre, f.preDone = f.sum(-recoveryPerWind, 0), true
		if f.pre.n == 0 {
			f.none, f.slots = true, nil
			return
		}
	}
	// Window k is final once at + (k+10) slots <= w.
	last := slotOf(w-f.at) - recoveryPerWind
	for ; f.next <= last; f.next++ {
		if f.next >= f.base+len(f.slots) {
			f.next = last + 1 // empty from here on
			break
		}
		if s := f.sum(f.next, f.next+recoveryPerWind); s.n > 0 && isBelow(f.pre, s) {
			f.below = f.next
		}
	}
	if d := f.next - f.base; d > 0 { // no window still to judge reads them
		f.slots, f.base = f.slots[min(d, len(f.slots)):], f.next
	}
}

// result is the fault's Recovery given what was added (read-only: more
// may be added and judged afterwards).
func (f *faultRecovery) result(last time.Duration) time.Duration {
	if f.none {
		return 0
	}
	pre := f.pre
	if !f.preDone {
		if pre = f.sum(-recoveryPerWind, 0); pre.n == 0 {
			return 0
		}
	}
	below := f.below
	for k := max(f.next, 0); k < f.base+len(f.slots); k++ {
		if s := f.sum(k, k+recoveryPerWind); s.n > 0 && isBelow(pre, s) {
			below = k
		}
	}
	if below < 0 {
		return 0
	}
	end := time.Duration(below+recoveryPerWind) * recoverySlot
	if f.at+end > last {
		return -1 // still below at the end of the run
	}
	return end
}

// fill sets each fault's Recovery (a fault whose time was not tracked:
// -1, never recovered as far as anyone knows; Tally's callers give every
// fault's time).
func (r *recovery) fill(faults []FaultRecord) {
	for i := range faults {
		faults[i].Recovery = -1
		if r == nil {
			continue
		}
		if f := r.of(faults[i].At); f != nil {
			faults[i].Recovery = f.result(r.last)
		}
	}
}

// kept is the number of slots the recovery holds (tests: its memory).
func (r *recovery) kept() int {
	n := 0
	for _, f := range r.faults {
		n += len(f.slots)
	}
	return n
}

// releaseMark is the arrival watermark of the ended requests. The driver
// releases requests in arrival order and numbers them so (gpu.Job's
// Released: 0, 1, …); once every request released before low has ended,
// every request still to end arrived at or after at, the arrival of
// request low-1. above holds the requests that ended before a lower one
// (its size is the disorder of the ends, not the run's length).
//
// A release number that ends twice (a Job copied without its Released)
// breaks the mark for good: it then never moves again, so the recoveries
// stay exact and only their memory is no longer bounded.
type releaseMark struct {
	low    int64
	at     time.Duration
	above  map[int64]time.Duration
	broken bool
}

// end records request i's end; it reports whether the watermark moved.
func (m *releaseMark) end(i int64, arrival time.Duration) bool {
	if _, twice := m.above[i]; twice || i < m.low || m.broken {
		m.broken = true
		return false
	}
	if i != m.low {
		if m.above == nil {
			m.above = map[int64]time.Duration{}
		}
		m.above[i] = arrival
		return false
	}
	m.low++
	m.at = max(m.at, arrival)
	for len(m.above) > 0 {
		a, ok := m.above[m.low]
		if !ok {
			break
		}
		delete(m.above, m.low)
		m.low++
		m.at = max(m.at, a)
	}
	if len(m.above) == 0 {
		m.above = nil // a map never shrinks: let a burst's go
	}
	return true
}

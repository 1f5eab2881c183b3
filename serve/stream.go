package serve

import (
	"sync"
	"time"

	"github.com/pdemu/pdemu/workload"
)

// stream paces one request's events.
type stream struct {
	b      *Bridge
	req    *workload.Request
	out    chan Event
	notify chan struct{}

	// abortSent (under the Bridge's lock): the run was told to abort it.
	abortSent bool
	stopWatch func() bool // stops watching the request's context

	mu       sync.Mutex
	hasFirst bool
	worker   string
	arrival  time.Duration
	firstAt  time.Duration
	step     time.Duration
	hasEnd   bool
	end      End
}

func (st *stream) poke() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

func (st *stream) state() (first bool, end bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.hasFirst, st.hasEnd
}

func (st *stream) run() {
	defer st.b.wg.Done()
	defer close(st.out)
	for {
		first, end := st.state()
		if first || end {
			break
		}
		<-st.notify
	}
	st.mu.Lock()
	hasFirst, worker, arrival, firstAt, step := st.hasFirst, st.worker, st.arrival, st.firstAt, st.step
	st.mu.Unlock()
	n := st.req.OutputLen
	next := 0
	emit := func(at time.Duration) {
		st.out <- Event{Kind: EvToken, Index: next, Since: at - arrival, Emulated: at, Wall: time.Now(), Worker: worker}
		next++
	}
	if hasFirst {
		if n > 1 {
			emit(firstAt)
		}
		// Tokens 1 .. n−2 at the paced times; the last waits for the end.
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for next < n-1 {
			if _, end := st.state(); end {
				break
			}
			target := firstAt + time.Duration(next)*step
			if now := st.b.emulated(); now < target {
				timer.Reset(time.Duration(float64(target-now)/st.b.scale) + 1)
				select {
				case <-timer.C:
				case <-st.notify:
				}
				continue
			}
			emit(target)
		}
	}
	for {
		if _, end := st.state(); end {
			break
		}
		<-st.notify
	}
	st.mu.Lock()
	e := st.end
	st.mu.Unlock()
	if e.Failed != "" {
		st.out <- Event{Kind: EvFailed, Since: e.Done - e.Arrival, Emulated: e.Done, Wall: time.Now(), Worker: e.Worker, Prefill: e.Prefill, Mode: e.Mode, Reason: e.Failed, Fault: e.Fault}
		return
	}
	if !hasFirst {
		// The end came without a first-token report: take its timeline.
		arrival, worker = e.Arrival, e.Worker
		if e.FirstToken > 0 {
			emit(e.FirstToken)
		}
	}
	// The rest at once, spread up to the end; the last token at the end.
	for next < n-1 {
		at := min(e.Done, firstAt+time.Duration(next)*step)
		if !hasFirst {
			at = e.Done
		}
		emit(at)
	}
	if next < n {
		emit(e.Done)
	}
	st.out <- Event{Kind: EvDone, Since: e.Done - e.Arrival, Emulated: e.Done, Wall: time.Now(), Worker: e.Worker, Prefill: e.Prefill, Mode: e.Mode, CachedTokens: e.CachedTokens,
		Queue: e.Queue, PrefillTime: e.PrefillTime, DecodeTime: e.Done - e.FirstToken}
}

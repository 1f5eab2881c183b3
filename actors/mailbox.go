package actors

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// mailbox is protoactor's default mailbox (actor/mailbox.go: system
// messages first, suspension, the dispatcher's throughput, failures
// escalated to the supervisor) without its allocation per activation:
// the default one hands the method value m.processMessages to the
// dispatcher each time an idle mailbox gets a message, and that closure
// is a heap allocation — one per message on the virtual clock, where the
// synchronized dispatcher drains the mailbox inside every Send. This one
// makes the func value once, in RegisterHandlers.
//
// Both queues are FIFO rings under one mutex, held only to push and pop
// (never while a message is handled: handling may post to the same
// mailbox, e.g. a supervisor's Restart).
type mailbox struct {
	mu   sync.Mutex
	user ring
	sys  ring

	status    atomic.Int32 // mbIdle or mbRunning
	userN     atomic.Int32
	sysN      atomic.Int32
	suspended atomic.Bool

	invoker    actor.MessageInvoker
	dispatcher actor.Dispatcher
	process    func() // m.processMessages, made once
	// inline: the dispatcher runs the mailbox on the poster's goroutine
	// (the virtual clock's synchronized one), so a message posted to an
	// idle, empty, unsuspended mailbox is handled at once without being
	// queued (PostUserMessage).
	inline bool
}

const (
	mbIdle int32 = iota
	mbRunning
)

// newMailbox is an actor.MailboxProducer.
func newMailbox() actor.Mailbox { return &mailbox{} }

// newInlineMailbox is the mailbox for a synchronized dispatcher (one that
// runs what it is given on the caller's goroutine): see mailbox.inline.
func newInlineMailbox() actor.Mailbox { return &mailbox{inline: true} }

func (m *mailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.invoker, m.dispatcher = invoker, dispatcher
	m.process = m.processMessages
}

func (m *mailbox) Start() {}

func (m *mailbox) UserMessageCount() int { return int(m.userN.Load()) }

// PostUserMessage queues message. Unlike the default mailbox it does not
// unpack actor.MessageBatch: nothing in pdemu sends one.
func (m *mailbox) PostUserMessage(message any) {
	// Handled at once when nothing is ahead of it: the synchronized
	// dispatcher would run the mailbox here anyway, and the queue would
	// only hold this message (a push and a pop under the lock, two
	// counter updates). A message posted concurrently while this one is
	// handled finds the mailbox running and is queued; the drain after it
	// takes it, as processMessages takes one posted after its loop ended.
	if m.inline && m.userN.Load() == 0 && m.sysN.Load() == 0 && !m.suspended.Load() &&
		m.status.CompareAndSwap(mbIdle, mbRunning) {
		m.invokeNow(message)
		m.release()
		return
	}
	m.post(&m.user, &m.userN, message)
}

func (m *mailbox) PostSystemMessage(message any) { m.post(&m.sys, &m.sysN, message) }

// post queues message on q, counts it in n and schedules the mailbox.
func (m *mailbox) post(q *ring, n *atomic.Int32, message any) {
	m.mu.Lock()
	q.push(message)
	m.mu.Unlock()
	n.Add(1)
	m.schedule()
}

func (m *mailbox) schedule() {
	if m.status.CompareAndSwap(mbIdle, mbRunning) {
		m.dispatcher.Schedule(m.process)
	}
}

func (m *mailbox) processMessages() {
	for {
		m.run()
		if !m.idle() {
			return
		}
	}
}

// idle sets a running mailbox idle and reports whether it took it back to
// run again: messages posted after its loop ended but before the status
// went idle found it running and did not schedule.
func (m *mailbox) idle() bool {
	m.status.Store(mbIdle)
	sys, user := m.sysN.Load(), m.userN.Load()
	return (sys > 0 || (!m.suspended.Load() && user > 0)) && m.status.CompareAndSwap(mbIdle, mbRunning)
}

// release ends an inline handling (PostUserMessage): the mailbox goes
// idle, or drains what was posted meanwhile.
func (m *mailbox) release() {
	if m.idle() {
		m.processMessages()
	}
}

// invokeNow hands message to the actor with run's failure handling.
func (m *mailbox) invokeNow(message any) {
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, message)
		}
	}()
	m.invoker.InvokeUserMessage(message)
}

func (m *mailbox) pop(q *ring) any {
	m.mu.Lock()
	v := q.pop()
	m.mu.Unlock()
	return v
}

func (m *mailbox) run() {
	var msg any
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
		}
	}()
	for i, t := 0, m.dispatcher.Throughput(); ; i++ {
		if i > t {
			i = 0
			runtime.Gosched()
		}
		// The counts are read before taking the lock: an activation for one
		// message took the mutex four times (both queues popped twice, the
		// second time empty), a third of the virtual clock's own cost per
		// message (BenchmarkVirtualHop). A message pushed but not yet
		// counted is taken by processMessages' re-check, as one posted
		// after the loop ended.
		if m.sysN.Load() > 0 {
			if msg = m.pop(&m.sys); msg != nil {
				m.sysN.Add(-1)
				switch msg.(type) {
				case *actor.SuspendMailbox:
					m.suspended.Store(true)
				case *actor.ResumeMailbox:
					m.suspended.Store(false)
				default:
					m.invoker.InvokeSystemMessage(msg)
				}
				continue
			}
		}
		if m.suspended.Load() || m.userN.Load() == 0 {
			return
		}
		if msg = m.pop(&m.user); msg == nil {
			return
		}
		m.userN.Add(-1)
		m.invoker.InvokeUserMessage(msg)
	}
}

// ring is an unbounded FIFO of messages (nil is not a message): a list of
// segments, so a flooded mailbox grows without copying (a doubling array
// copied its whole backlog, with write barriers during a GC), and an
// emptied segment is kept as a spare for the next one needed. Segments
// start at firstSegmentLen and double up to segmentLen: most actors of a
// big cluster (196,608 link actors in 256P768D) only ever hold a message
// or two, and a full first segment each was 0.45 GB.
type ring struct {
	head, tail *segment
	hi, ti     int // next pop in head, next push in tail
	spare      *segment
}

const (
	firstSegmentLen = 4
	segmentLen      = 128
)

type segment struct {
	buf  []any
	next *segment
}

func (q *ring) push(v any) {
	if q.tail == nil {
		q.head, q.hi, q.ti = q.newSegment(firstSegmentLen), 0, 0
		q.tail = q.head
	} else if q.ti == len(q.tail.buf) {
		s := q.newSegment(min(2*len(q.tail.buf), segmentLen))
		q.tail.next, q.tail, q.ti = s, s, 0
	}
	q.tail.buf[q.ti] = v
	q.ti++
}

// newSegment returns the spare when it holds at least n messages, else a
// new segment of n.
func (q *ring) newSegment(n int) *segment {
	if s := q.spare; s != nil && len(s.buf) >= n {
		q.spare = nil
		return s
	}
	return &segment{buf: make([]any, n)}
}

func (q *ring) pop() any {
	if q.head == nil {
		return nil
	}
	if q.head == q.tail && q.hi == q.ti {
		q.hi, q.ti = 0, 0 // empty: start the segment over
		return nil
	}
	if q.hi == len(q.head.buf) { // head is used up; the next one holds the rest
		s := q.head
		q.head, q.hi = s.next, 0
		s.next = nil
		if q.spare == nil || len(s.buf) > len(q.spare.buf) {
			q.spare = s
		}
	}
	v := q.head.buf[q.hi]
	q.head.buf[q.hi] = nil
	q.hi++
	if q.head == q.tail && q.hi == q.ti {
		q.hi, q.ti = 0, 0 // emptied: start the segment over (the mailbox pops only what it counted)
	}
	return v
}

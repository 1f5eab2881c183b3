package cluster

import (
	"time"

	"github.com/pdemu/pdemu/effect"
)

// Addr is a node's address: its index in Cluster.Nodes. The runtime
// resolves it (actors/ to a PID); nodes never see anything else.
type Addr int32

// RunAddr is the address of the run itself: Failed, Finished and Progress
// go there, and the runtime turns them into the run's end and progress
// reports instead of delivering them to a node.
const RunAddr Addr = -1

// Envelope is one outgoing message: to whom, what, and after which
// emulated delay.
type Envelope struct {
	To    Addr
	Msg   any
	Delay time.Duration
}

// Ready is what one Handle call made happen: the outgoing messages in send
// order and the node's next wake-up (see effect.Ready; Out is valid until
// the next call on the node).
type Ready = effect.Ready[Envelope]

// Node is one member of the cluster: a pure state machine that handles a
// message at emulated time now and returns what to send. now never
// decreases between calls. Handle is called by one goroutine at a time.
type Node interface {
	Handle(now time.Duration, msg any) Ready
}

// Kind names what a node is, for the protocol table and diagnostics.
type Kind string

// Node kinds.
const (
	KindDriver    Kind = "driver"
	KindCollector Kind = "collector"
	KindRouter    Kind = "router" // P/D router
	KindDecode    Kind = "decode"
	KindPrefill   Kind = "prefill"
	KindLink      Kind = "link"
	KindGlobal    Kind = "global" // fused deployments' global router
	KindBucket    Kind = "bucket"
	KindRun       Kind = "run" // RunAddr
)

// outbox is what every node embeds: its address and its reused send
// buffer.
type outbox struct {
	self Addr
	out  []Envelope
}

func (o *outbox) bind(a Addr) { o.self = a }

func (o *outbox) send(to Addr, msg any, d time.Duration) {
	o.out = append(o.out, Envelope{To: to, Msg: msg, Delay: d})
}

// ready hands the sends of this call over, with the wake-up (at, ok).
func (o *outbox) ready(at time.Duration, ok bool) Ready { return effect.Take(&o.out, at, ok) }

// Host drives one node the same way in every runtime (the actor shell and
// the in-memory test network): it delivers a message and turns the node's
// wake-up into a Wake sent to itself. It tracks the last Wake it sent and
// sends a new one only when the node wants to wake before it (or none is
// tracked: the tracked one fired). A Wake that is no longer tracked still
// arrives; nodes treat every Wake as "advance to now", which is harmless
// at any time.
//
// Wakes are sent as *Wake (a Wake boxed in an interface is an allocation
// per timer): the Host owns every *Wake it sent and takes it back for
// reuse once it is delivered to it again; nodes read it during Handle
// only.
type Host struct {
	node  Node
	self  Addr
	at    time.Duration // pending wake
	has   bool
	out   []Envelope // the node's sends and the Wake, reused
	wakes []*Wake    // delivered Wakes, for reuse
	// The first buffers, inside the Host (Init): most nodes never have
	// more than a Wake or two out, and a run of 835 nodes allocated
	// ~3 of them per node.
	wake0   Wake
	wakeBuf [2]*Wake
	outBuf  [4]Envelope
}

// NewHost hosts node at address self.
func NewHost(node Node, self Addr) *Host {
	h := &Host{}
	h.Init(node, self)
	return h
}

// Init makes h (a zero Host, e.g. a field of the runtime's actor) host
// node at address self. A Host must not be copied once initialised.
func (h *Host) Init(node Node, self Addr) {
	*h = Host{node: node, self: self}
	h.wakes = append(h.wakeBuf[:0], &h.wake0)
	h.out = h.outBuf[:0]
}

// Deliver hands msg to the node at now and returns the envelopes to send,
// in order, the node's Wake (if one is needed) last. The slice is valid
// until the next Deliver.
func (h *Host) Deliver(now time.Duration, msg any) []Envelope {
	w, _ := msg.(*Wake)
	if w != nil && h.has && w.At == h.at {
		h.has = false
	}
	rd := h.node.Handle(now, msg)
	if w != nil {
		h.wakes = append(h.wakes, w) // delivered: nobody holds it now
	}
	if !rd.HasWake || (h.has && h.at <= rd.Wake) {
		return rd.Out
	}
	h.at, h.has = rd.Wake, true
	if n := len(h.wakes); n > 0 {
		w, h.wakes = h.wakes[n-1], h.wakes[:n-1]
		w.At = rd.Wake
	} else {
		w = &Wake{At: rd.Wake}
	}
	h.out = append(append(h.out[:0], rd.Out...), Envelope{To: h.self, Msg: w, Delay: rd.Wake - now})
	return h.out
}

package kvevents

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
)

// Publisher is one worker's ZMQ PUB socket (vLLM's ZmqEventPublisher
// without the replay socket). It speaks ZMTP through zmq4.Conn but does
// its own PUB fan-out: zmq4's PUB socket queues a message and returns
// before any byte is written, and its Close drops what that queue still
// holds, so a batch it reported sent could be lost at close (a drained
// worker's last AllBlocksCleared). Here a batch counts as sent once it
// is written to every subscribed peer, and Close returns after that.
type Publisher struct {
	ln       net.Listener
	topic    []byte
	endpoint string

	mu     sync.Mutex
	seq    int64
	closed bool
	q      chan frame
	done   chan struct{}

	pmu     sync.Mutex
	peers   []*peer
	lnDone  bool
	aborted atomic.Bool

	dropped atomic.Int64
	sent    atomic.Int64
	failed  atomic.Int64
}

// peer is one subscriber connection and the topic prefixes it asked for.
type peer struct {
	conn   *zmq4.Conn
	raw    net.Conn
	mu     sync.Mutex
	topics map[string]struct{}
}

func (pr *peer) subscribed(topic []byte) bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for k := range pr.topics {
		if strings.HasPrefix(string(topic), k) {
			return true
		}
	}
	return false
}

type frame struct {
	seq     int64
	payload []byte
}

// QueueLen is how many batches a Publisher buffers before it drops.
const QueueLen = 1 << 14

// writeTimeout bounds one write to one subscriber: a subscriber that
// stops reading is dropped (the batch counts as failed), so it cannot
// stall the others.
const writeTimeout = 5 * time.Second

// Listen binds a PUB socket on endpoint ("tcp://127.0.0.1:0" picks a free
// port; Endpoint says which) publishing under topic.
func Listen(endpoint, topic string) (*Publisher, error) {
	addr, ok := strings.CutPrefix(endpoint, "tcp://")
	if !ok {
		return nil, fmt.Errorf("kvevents: endpoint %q: only tcp://host:port is supported", endpoint)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kvevents: listen %s: %w", endpoint, err)
	}
	return publishOn(ln, topic), nil
}

// publishOn starts a Publisher accepting subscribers on ln.
func publishOn(ln net.Listener, topic string) *Publisher {
	p := &Publisher{ln: ln, topic: []byte(topic), endpoint: "tcp://" + ln.Addr().String(),
		q: make(chan frame, QueueLen), done: make(chan struct{})}
	go p.accept()
	go p.run()
	return p
}

// Endpoint is the address subscribers dial (tcp://host:port).
func (p *Publisher) Endpoint() string { return p.endpoint }

// Topic is the topic every batch is published under.
func (p *Publisher) Topic() string { return string(p.topic) }

func (p *Publisher) accept() {
	for {
		c, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // e.g. out of file descriptors: retry, as net/http does
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go p.handshake(c)
	}
}

// handshake opens ZMTP on c, adds it as a peer and reads its
// (un)subscriptions until it goes away.
func (p *Publisher) handshake(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(writeTimeout))
	zc, err := zmq4.Open(c, null.Security(), zmq4.Pub, nil, true, nil)
	if err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	pr := &peer{conn: zc, raw: c, topics: map[string]struct{}{}}
	p.pmu.Lock()
	if p.lnDone {
		p.pmu.Unlock()
		_ = c.Close()
		return
	}
	p.peers = append(p.peers, pr)
	p.pmu.Unlock()
	defer p.drop(pr)
	for {
		msg, err := zc.RecvMsg()
		if err != nil {
			return
		}
		if msg.Type == zmq4.CmdMsg || len(msg.Frames) != 1 || len(msg.Frames[0]) == 0 {
			continue
		}
		f := msg.Frames[0]
		pr.mu.Lock()
		switch f[0] {
		case 0:
			delete(pr.topics, string(f[1:]))
		case 1:
			pr.topics[string(f[1:])] = struct{}{}
		}
		pr.mu.Unlock()
	}
}

// drop closes pr and removes it from the peers.
func (p *Publisher) drop(pr *peer) {
	_ = pr.raw.Close()
	p.pmu.Lock()
	defer p.pmu.Unlock()
	for i, x := range p.peers {
		if x == pr {
			p.peers = append(p.peers[:i], p.peers[i+1:]...)
			return
		}
	}
}

func (p *Publisher) run() {
	defer close(p.done)
	var targets []*peer
	for f := range p.q {
		if p.aborted.Load() {
			p.failed.Add(1)
			continue
		}
		var seq [8]byte
		binary.BigEndian.PutUint64(seq[:], uint64(f.seq))
		msg := zmq4.NewMsgFrom(p.topic, seq[:], f.payload)
		p.pmu.Lock()
		targets = append(targets[:0], p.peers...)
		p.pmu.Unlock()
		ok := true
		for _, pr := range targets {
			if !pr.subscribed(p.topic) {
				continue
			}
			_ = pr.raw.SetWriteDeadline(time.Now().Add(writeTimeout))
			if err := pr.conn.SendMsg(msg); err != nil {
				ok = false
				p.drop(pr)
			}
		}
		if ok {
			p.sent.Add(1)
		} else {
			p.failed.Add(1)
		}
	}
}

// Publish queues b with the next sequence number; it never blocks. A
// batch that finds the queue full is dropped (its sequence number is
// used, so subscribers see the gap).
func (p *Publisher) Publish(b Batch) error {
	payload, err := Encode(b)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("kvevents: publisher closed")
	}
	f := frame{seq: p.seq, payload: payload}
	p.seq++
	select {
	case p.q <- f:
	default:
		p.dropped.Add(1)
	}
	return nil
}

// Stats: batches sent (written to every subscriber), dropped (queue
// full) and failed (a write failed, or Close gave up on it). After Close
// returns, every published batch is in exactly one of them.
func (p *Publisher) Stats() (sent, dropped, failed int64) {
	return p.sent.Load(), p.dropped.Load(), p.failed.Load()
}

// Close writes what is queued (waiting at most timeout; what is left
// then counts as failed) and closes the socket.
func (p *Publisher) Close(timeout time.Duration) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.q)
	p.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.aborted.Store(true)
	}
	err := p.ln.Close()
	p.pmu.Lock()
	p.lnDone = true
	peers := append([]*peer(nil), p.peers...)
	p.pmu.Unlock()
	for _, pr := range peers {
		_ = pr.raw.Close() // fails a write in flight
	}
	<-p.done
	return err
}

// Message is one received batch.
type Message struct {
	Topic string
	Seq   int64
	Batch Batch
}

// Subscribe dials endpoint with a SUB socket subscribed to topic ("" =
// all) and calls f for every batch until ctx is done or the socket fails;
// a payload that does not decode ends it with the error. It returns once
// the socket is connected; the returned channel gets the final error (nil
// when ctx ended it).
func Subscribe(ctx context.Context, endpoint, topic string, f func(Message)) (<-chan error, error) {
	sock := zmq4.NewSub(ctx, zmq4.WithDialerRetry(50*time.Millisecond))
	// zmq4's Dial runs the ZMTP handshake and does not watch ctx: a peer
	// that accepts the connection and never greets would hold it forever.
	dialed := make(chan error, 1)
	go func() { dialed <- sock.Dial(endpoint) }()
	select {
	case err := <-dialed:
		if err != nil {
			_ = sock.Close()
			return nil, fmt.Errorf("kvevents: dial %s: %w", endpoint, err)
		}
	case <-ctx.Done():
		_ = sock.Close()
		return nil, fmt.Errorf("kvevents: dial %s: %w", endpoint, ctx.Err())
	}
	if err := sock.SetOption(zmq4.OptionSubscribe, topic); err != nil {
		_ = sock.Close()
		return nil, fmt.Errorf("kvevents: subscribe %q: %w", topic, err)
	}
	errc := make(chan error, 1)
	go func() {
		defer sock.Close()
		for {
			msg, err := sock.Recv()
			if err != nil {
				if ctx.Err() != nil {
					errc <- nil
				} else {
					errc <- fmt.Errorf("kvevents: recv from %s: %w", endpoint, err)
				}
				return
			}
			if len(msg.Frames) != 3 || len(msg.Frames[1]) != 8 {
				errc <- fmt.Errorf("kvevents: %s: a message has 3 frames (topic, 8-byte seq, payload), got %d", endpoint, len(msg.Frames))
				return
			}
			b, err := Decode(msg.Frames[2])
			if err != nil {
				errc <- fmt.Errorf("kvevents: %s: %w", endpoint, err)
				return
			}
			f(Message{Topic: string(msg.Frames[0]), Seq: int64(binary.BigEndian.Uint64(msg.Frames[1])), Batch: b})
		}
	}()
	return errc, nil
}

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
)

// Publisher is one worker's ZMQ PUB socket (vLLM's ZmqEventPublisher
// without the replay socket).
type Publisher struct {
	sock     zmq4.Socket
	topic    []byte
	endpoint string

	mu      sync.Mutex
	seq     int64
	closed  bool
	q       chan frame
	done    chan struct{}
	dropped atomic.Int64
	sent    atomic.Int64
	failed  atomic.Int64
}

type frame struct {
	seq     int64
	payload []byte
}

// QueueLen is how many batches a Publisher buffers before it drops.
const QueueLen = 1 << 14

// Listen binds a PUB socket on endpoint ("tcp://127.0.0.1:0" picks a free
// port; Endpoint says which) publishing under topic.
func Listen(endpoint, topic string) (*Publisher, error) {
	if !strings.HasPrefix(endpoint, "tcp://") {
		return nil, fmt.Errorf("kvevents: endpoint %q: only tcp://host:port is supported", endpoint)
	}
	sock := zmq4.NewPub(context.Background(), zmq4.WithTimeout(5*time.Second))
	if err := sock.Listen(endpoint); err != nil {
		_ = sock.Close()
		return nil, fmt.Errorf("kvevents: listen %s: %w", endpoint, err)
	}
	ep := endpoint
	if a, ok := sock.Addr().(*net.TCPAddr); ok {
		ep = fmt.Sprintf("tcp://%s", a.String())
	}
	p := &Publisher{sock: sock, topic: []byte(topic), endpoint: ep, q: make(chan frame, QueueLen), done: make(chan struct{})}
	go p.run()
	return p, nil
}

// Endpoint is the address subscribers dial (tcp://host:port).
func (p *Publisher) Endpoint() string { return p.endpoint }

// Topic is the topic every batch is published under.
func (p *Publisher) Topic() string { return string(p.topic) }

func (p *Publisher) run() {
	defer close(p.done)
	for f := range p.q {
		var seq [8]byte
		binary.BigEndian.PutUint64(seq[:], uint64(f.seq))
		if err := p.sock.Send(zmq4.NewMsgFrom(p.topic, seq[:], f.payload)); err != nil {
			p.failed.Add(1)
			continue
		}
		p.sent.Add(1)
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

// Stats: batches sent, dropped (queue full) and failed (socket error).
func (p *Publisher) Stats() (sent, dropped, failed int64) {
	return p.sent.Load(), p.dropped.Load(), p.failed.Load()
}

// Close sends what is queued (waiting at most timeout) and closes the
// socket.
func (p *Publisher) Close(timeout time.Duration) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.q)
	p.mu.Unlock()
	select {
	case <-p.done:
	case <-time.After(timeout):
	}
	return p.sock.Close()
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
	if err := sock.Dial(endpoint); err != nil {
		_ = sock.Close()
		return nil, fmt.Errorf("kvevents: dial %s: %w", endpoint, err)
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

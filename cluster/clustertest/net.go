// Package clustertest delivers a cluster's messages in memory, without
// actors, in the order the actor runtime's virtual clock delivers them. It
// is a test harness (in the manner of etcd-io/raft's in-memory network):
// runs go through package actors; tests use Net to check that the cluster
// tier alone gives the same results, and to watch every message.
package clustertest

import (
	"errors"
	"fmt"
	"time"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/effect"
	"github.com/pdemu/pdemu/internal/minheap"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// Net runs one cluster in emulated time.
type Net struct {
	Cluster *cluster.Cluster
	// Tap, when set, sees every message sent (from is -1 for Start).
	Tap func(from cluster.Addr, e cluster.Envelope)

	hosts    []*cluster.Host
	seq      []uint64
	q        *minheap.Heap[item] // every message sent and not delivered, by (at, from, seq)
	now      time.Duration
	err      error
	done     bool
	messages int64
	ext      uint64             // the sequence of messages from outside (Inject)
	injected []cluster.Envelope // Inject's, sent by Run after Start
}

// New builds spec's cluster around src.
func New(spec *topology.Spec, src workload.Source) (*Net, error) {
	cl, err := cluster.Build(spec, src)
	if err != nil {
		return nil, err
	}
	n := &Net{Cluster: cl, seq: make([]uint64, len(cl.Nodes)), q: minheap.New(lessItem)}
	for i, node := range cl.Nodes {
		n.hosts = append(n.hosts, cluster.NewHost(node, cluster.Addr(i)))
	}
	return n, nil
}

// Run delivers Start to the driver, then every message, one emulated time
// step after another (all messages of the earliest time, in (time, sender,
// sender sequence) order, before any message they cause), until none is
// left or a node fails the run. It returns the failure, or an error when
// the run ended without the collector's Done.
func (n *Net) Run() error {
	n.push(-1, cluster.Envelope{To: n.Cluster.Driver, Msg: cluster.Start{}})
	for _, e := range n.injected {
		n.push(-1, e)
	}
	var batch []item
	for n.err == nil && n.q.Len() > 0 {
		// The next step: every message due at the earliest time, popped in
		// (sender, sender sequence) order; what they send, even for now,
		// waits for a later step.
		at := n.q.Min().At
		batch = batch[:0]
		for n.q.Len() > 0 && n.q.Min().At == at {
			batch = append(batch, n.q.Pop())
		}
		n.now = at
		for _, it := range batch {
			n.messages++
			for _, e := range n.hosts[it.to].Deliver(n.now, it.msg) {
				n.push(it.to, e)
			}
		}
		clear(batch)
	}
	if n.err == nil && !n.done {
		return errors.New("clustertest: the run ended without Done")
	}
	return n.err
}

// Inject queues msg for the node at address to, at emulated time at, as
// from outside the cluster (an open-ended run's requests and EndOfInput;
// see cluster.Cluster.OpenEnded). Call it before Run, with at > 0;
// messages injected for the same time are delivered in Inject order.
func (n *Net) Inject(to cluster.Addr, at time.Duration, msg any) {
	n.injected = append(n.injected, cluster.Envelope{To: to, Msg: msg, Delay: at})
}

// Now is the emulated time of the last step; Messages counts deliveries.
func (n *Net) Now() time.Duration { return n.now }
func (n *Net) Messages() int64    { return n.messages }

func (n *Net) push(from cluster.Addr, e cluster.Envelope) {
	if n.Tap != nil {
		n.Tap(from, e)
	}
	if e.To == cluster.RunAddr {
		switch m := e.Msg.(type) {
		case cluster.Failed:
			n.err = m.Err
		case cluster.Done:
			n.done = true
		}
		return
	}
	if e.To < 0 || int(e.To) >= len(n.hosts) {
		n.err = fmt.Errorf("clustertest: node %d sent %T to unknown address %d", from, e.Msg, e.To)
		return
	}
	// Sender ids are address+1 (0 sends Start), as in package actors.
	id := int32(from) + 1
	var seq uint64
	if from >= 0 {
		n.seq[from]++
		seq = n.seq[from]
	} else if _, start := e.Msg.(cluster.Start); !start {
		n.ext++
		seq = n.ext
	}
	n.q.Push(item{Stamp: effect.Stamp{At: n.now + max(e.Delay, 0), From: id, Seq: seq}, to: e.To, msg: e.Msg})
}

type item struct {
	effect.Stamp
	to  cluster.Addr
	msg any
}

// lessItem is the virtual clock's delivery order (effect.Stamp).
func lessItem(a, b *item) bool { return a.Before(&b.Stamp) }

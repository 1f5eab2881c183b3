package actors

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/cluster"
)

// hopNode passes a token on to the next node of a ring after a delay that
// depends on the token and the hop (so steps hold one message or a few,
// as in real runs: 1.04 messages per step on 16p48d), until the token
// made its hops.
type hopNode struct {
	next cluster.Addr
	out  []cluster.Envelope
	seen int64
	zero bool // every other hop without delay (BenchmarkVirtualHopZeroDelay)
}

type hopToken struct {
	id   int
	hops *int64 // hops left, shared by the token's carriers (one at a time)
}

func (n *hopNode) Handle(_ time.Duration, msg any) cluster.Ready {
	n.out = n.out[:0]
	if t, ok := msg.(*hopToken); ok {
		n.seen++
		if *t.hops > 0 {
			*t.hops--
			d := time.Duration(1+(*t.hops*7+int64(t.id)*13)%97) * time.Microsecond
			if n.zero && *t.hops%2 == 0 {
				d = 0
			}
			n.out = append(n.out, cluster.Envelope{To: n.next, Msg: t, Delay: d})
		}
	}
	return cluster.Ready{Out: n.out}
}

// hopRing is a ring of hopNodes spawned on a borrowed actor system with a
// virtual clock, and the tokens to pass round it (their hops left in
// left, which the caller sets before each run).
type hopRing struct {
	ps   *pooledSystem
	clk  *VirtualClock
	pids []*actor.PID
	toks []*hopToken
	left []int64
}

func newHopRing(nodes, tokens int) *hopRing { return newHopRingZero(nodes, tokens, false) }

// newHopRingZero is newHopRing whose nodes pass every other hop on
// without delay when zero is set.
func newHopRingZero(nodes, tokens int, zero bool) *hopRing {
	r := &hopRing{ps: borrowSystem(hclog.NewNullLogger(), false), left: make([]int64, tokens)}
	cl := &cluster.Cluster{Names: make([]string, nodes)}
	for i := range nodes {
		cl.Nodes = append(cl.Nodes, &hopNode{next: cluster.Addr((i + 1) % nodes), zero: zero})
	}
	rs := &runState{done: make(chan struct{}), abort: func() {}}
	r.clk = NewVirtualClock(r.ps.sys)
	r.pids = spawn(r.ps.sys, cl, r.clk, rs, true)
	for i := range tokens {
		r.toks = append(r.toks, &hopToken{id: i, hops: &r.left[i]})
	}
	return r
}

// stop stops the ring's actors and gives the actor system back.
func (r *hopRing) stop() {
	for _, p := range r.pids {
		_ = r.ps.sys.Root.StopFuture(p).Wait()
	}
	r.ps.release()
}

// BenchmarkVirtualHop is the virtual clock's own cost per message, with a
// node that does nothing but forward: 64 nodes in a ring, 32 tokens each
// making 4,096 hops (131,072 messages per op). ns/msg and allocs/msg are
// the runtime's floor under every run's per-message figure
// (bench.BenchmarkPerMessage): heap, step bookkeeping, protoactor delivery,
// mailbox and shell.
func BenchmarkVirtualHop(b *testing.B) { benchVirtualHop(b, false) }

// BenchmarkVirtualHopZeroDelay is BenchmarkVirtualHop with every other
// hop sent without delay, as most messages of a run are (the admission
// round trips): the clock's lane instead of its heap (vqueue.go).
func BenchmarkVirtualHopZeroDelay(b *testing.B) { benchVirtualHop(b, true) }

func benchVirtualHop(b *testing.B, zero bool) {
	const nodes, tokens, hops = 64, 32, 4096
	r := newHopRingZero(nodes, tokens, zero)
	defer r.stop()
	clk, pids, toks, left := r.clk, r.pids, r.toks, r.left
	b.ReportAllocs()
	var msgs int64
	cpu0 := cpuTime()
	for b.Loop() {
		m0 := clk.Messages()
		for i, t := range toks {
			left[i] = hops - 1
			clk.Send(0, uint64(i), pids[i%nodes], t, time.Duration(i)*time.Microsecond)
		}
		if err := clk.Run(context.Background(), 0); err != nil {
			b.Fatal(err)
		}
		msgs += clk.Messages() - m0
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(msgs), "ns/msg")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(msgs), "cpu-ns/msg")
	b.ReportMetric(float64(msgs)/float64(b.N), "msgs/op")
	b.ReportMetric(float64(clk.Steps())/float64(clk.Messages()), "steps/msg")
}

// TestVirtualHopAllocs: delivering a node's message on the virtual clock
// allocates nothing of the runtime's own (heap slot, mailbox, shell, the
// clock's step): a ring of 8 nodes passing 4 tokens 1,024 hops each, 4,096
// messages per run, allocates (almost) nothing once warm.
func TestVirtualHopAllocs(t *testing.T) {
	const nodes, tokens, hops = 8, 4, 1024
	r := newHopRing(nodes, tokens)
	defer r.stop()
	clk, pids, toks, left := r.clk, r.pids, r.toks, r.left
	var seq uint64
	run := func() {
		for i, tk := range toks {
			left[i] = hops - 1
			seq++
			clk.Send(0, seq, pids[i%nodes], tk, time.Duration(i)*time.Microsecond)
		}
		if err := clk.Run(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	}
	m0 := clk.Messages()
	allocs := testing.AllocsPerRun(20, run)
	msgs := float64(clk.Messages()-m0) / 21 // AllocsPerRun runs once more to warm up
	if msgs != tokens*hops {
		t.Fatalf("%v messages per run, want %d", msgs, tokens*hops)
	}
	if allocs > 2 {
		t.Fatalf("%v allocations per run of %v messages: the virtual clock allocates per message", allocs, msgs)
	}
}

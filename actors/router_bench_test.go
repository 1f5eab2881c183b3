package actors

import (
	"sync/atomic"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/workload"
)

// instantDecode answers every admission at once (Direct) and reports the
// request finished, so the benchmark measures the router actor and the
// message hops, not a worker model.
type instantDecode struct {
	node
	idx    int
	router *actor.PID
	done   *atomic.Int64
	target int64
	finish chan struct{}
}

func (a *instantDecode) handle(msg any) {
	if m, ok := msg.(admitMsg); ok {
		a.send(a.router, admitReply{job: m.job, ds: m.ds, d: a.idx, mode: policy.ModeDirect}, 0)
		a.send(a.router, finishedMsg{a.idx}, 0)
		if a.done.Add(1) == a.target {
			close(a.finish)
		}
	}
}

type counter struct {
	n      atomic.Int64
	target int64
	finish chan struct{}
}

func (c *counter) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*envelope); ok && c.n.Add(1) == c.target {
		close(c.finish)
	}
}

// BenchmarkRouterActor: routed requests/s through the KVC router actor
// with 8 decode actors answering instantly (each request: router → Route →
// admit to D → reply → Admitted, plus a completion), compared with a bare
// protoactor Send to one actor in the same process. Reports req/s and the
// ratio bare-sends/s ÷ routed-requests/s (messages per routed request are
// 4, so a ratio near 4 means the policy itself costs little).
func BenchmarkRouterActor(b *testing.B) {
	const nd = 8
	reqs := make([]*workload.Request, 1024)
	for i := range reqs {
		blocks := make([]uint64, 64)
		for j := range blocks {
			blocks[j] = uint64(i%64+1)<<32 | uint64(j+1)
		}
		reqs[i] = &workload.Request{ID: int64(i), Session: int32(i % 64), Turn: i / 64, InputLen: 64 * 24, OutputLen: 10, Blocks: blocks, BlockTokens: 24}
	}

	var routed float64
	b.Run("router", func(b *testing.B) {
		ps := borrowSystem(hclog.NewNullLogger(), false)
		defer ps.release()
		sys := ps.sys
		clk := NewWallClock(sys, 1)
		rs := &runState{done: make(chan struct{}), abort: func() {}}
		k, err := policy.NewKVC(policy.KVCConfig{Alpha: 1, TauReject: 3, Epsilon: 2, Prefill: 1, Decode: nd})
		if err != nil {
			b.Fatal(err)
		}
		var done atomic.Int64
		finish := make(chan struct{})
		rtr := &routerActor{node: node{id: 1, name: "router", clk: clk}, pol: k, adm: k, fb: k}
		spawn := func(n *node, h handler) *actor.PID {
			sh := &shell{n: n, h: h, run: rs}
			pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return sh }))
			n.self = pid
			return pid
		}
		rpid := spawn(&rtr.node, rtr)
		var pids []*actor.PID
		for d := 0; d < nd; d++ {
			dec := &instantDecode{node: node{id: int32(2 + d), clk: clk}, idx: d, router: rpid, done: &done, target: int64(b.N), finish: finish}
			pids = append(pids, spawn(&dec.node, dec))
		}
		rtr.decode = pids
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r := reqs[i%len(reqs)]
			sys.Root.Send(rpid, &envelope{newJobMsg{&gpu.Job{Req: r, P: -1, D: -1}}})
		}
		<-finish
		b.StopTimer()
		routed = float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(routed, "req/s")
		for _, p := range append(pids, rpid) {
			_ = sys.Root.StopFuture(p).Wait()
		}
	})

	b.Run("bare-send", func(b *testing.B) {
		ps := borrowSystem(hclog.NewNullLogger(), false)
		defer ps.release()
		sys := ps.sys
		c := &counter{target: int64(b.N), finish: make(chan struct{})}
		pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return c }))
		msg := &envelope{startMsg{}}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sys.Root.Send(pid, msg)
		}
		<-c.finish
		b.StopTimer()
		sends := float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(sends, "msg/s")
		if routed > 0 {
			b.ReportMetric(sends/routed, "sends/routed")
		}
		_ = sys.Root.StopFuture(pid).Wait()
	})
}

package actors

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/internal/routebench"
	"github.com/pdemu/pdemu/policy"
)

// instantDecode answers every admission at once (Direct) and reports the
// request finished, so the benchmark measures the router actor and the
// message hops, not a worker model.
type instantDecode struct {
	idx    int
	router cluster.Addr
	out    []cluster.Envelope
	done   *atomic.Int64
	target int64
	finish chan struct{}
	win    *window
}

// window bounds the requests in flight in BenchmarkRouterActor: the sender
// waits while window are in flight and resumes once half of them ended.
// Flooding the router with all b.N requests at once made its mailbox hold
// them all (b.N × a 666-byte Job live), and the GC scanning that backlog
// was a fifth of the CPU: a cost of the benchmark, not of routing.
type window struct {
	inflight atomic.Int64
	wake     chan struct{}
}

const windowSize = 1024

func (w *window) acquire() {
	for w.inflight.Load() >= windowSize {
		<-w.wake
	}
	w.inflight.Add(1)
}

func (w *window) release() {
	if w.inflight.Add(-1) == windowSize/2 {
		select {
		case w.wake <- struct{}{}:
		default: // a wake is pending already
		}
	}
}

func (a *instantDecode) Handle(_ time.Duration, msg any) cluster.Ready {
	a.out = a.out[:0]
	if m, ok := msg.(cluster.Admit); ok {
		m.D, m.Mode = a.idx, policy.ModeDirect
		a.out = append(a.out,
			cluster.Envelope{To: a.router, Msg: cluster.AdmitReply{Admission: m.Admission}},
			cluster.Envelope{To: a.router, Msg: cluster.Finished{D: a.idx}})
		a.win.release()
		if a.done.Add(1) == a.target {
			close(a.finish)
		}
	}
	return cluster.Ready{Out: a.out}
}

type counter struct {
	n      atomic.Int64
	target int64
	finish chan struct{}
}

func (c *counter) Receive(ctx actor.Context) {
	// A concrete type check, as cheap as the *envelope check it replaced:
	// the baseline must not get slower than bare protoactor.
	if _, ok := ctx.Message().(cluster.Start); ok && c.n.Add(1) == c.target {
		close(c.finish)
	}
}

// BenchmarkRouterActor: routed requests/s through the KVC router actor
// with 8 decode actors answering instantly (each request: router → Route →
// admit to D → reply → Admitted, plus a completion), compared with a bare
// protoactor Send to one actor in the same process. Reports req/s and the
// ratio bare-sends/s ÷ routed-requests/s (messages per routed request are
// 4, so a ratio near 4 means the policy itself costs little), and the same
// ratio in CPU time. At most windowSize requests are in flight.
func BenchmarkRouterActor(b *testing.B) {
	const nd = 8
	reqs := routebench.Requests()

	var routed, routedCPU float64
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
		win := &window{wake: make(chan struct{}, 1)}
		cl := &cluster.Cluster{}
		var decode []cluster.Addr
		for d := 0; d < nd; d++ {
			decode = append(decode, cluster.Addr(d+1))
		}
		cl.Nodes = append(cl.Nodes, cluster.NewRouter(k, nil, decode))
		for d := 0; d < nd; d++ {
			cl.Nodes = append(cl.Nodes, &instantDecode{idx: d, router: 0, done: &done, target: int64(b.N), finish: finish, win: win})
		}
		cl.Names = make([]string, len(cl.Nodes))
		pids := spawn(sys, cl, clk, rs, false)
		rpid := pids[0]
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		// Jobs come from slabs, as the driver makes them (driver.go's
		// newJob): a Job allocated per request was the benchmark's own
		// 1 alloc/op and, with the GC it drove, a quarter of its CPU.
		var slab []gpu.Job
		for i := 0; i < b.N; i++ {
			if len(slab) == 0 {
				slab = make([]gpu.Job, 64)
			}
			j := &slab[0]
			slab = slab[1:]
			*j = gpu.Job{Req: reqs[i%len(reqs)], P: -1, D: -1}
			win.acquire()
			sys.Root.Send(rpid, cluster.NewJob{Job: j})
		}
		<-finish
		b.StopTimer()
		routed = float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(routed, "req/s")
		routedCPU = float64(cpuTime()-cpu0) / float64(b.N)
		b.ReportMetric(routedCPU, "cpu-ns/op")
		for _, p := range pids {
			_ = sys.Root.StopFuture(p).Wait()
		}
	})

	b.Run("bare-send", func(b *testing.B) {
		ps := borrowSystem(hclog.NewNullLogger(), false)
		defer ps.release()
		sys := ps.sys
		c := &counter{target: int64(b.N), finish: make(chan struct{})}
		pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return c }))
		var msg any = cluster.Start{}
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			sys.Root.Send(pid, msg)
		}
		<-c.finish
		b.StopTimer()
		sendCPU := float64(cpuTime()-cpu0) / float64(b.N)
		b.ReportMetric(sendCPU, "cpu-ns/op")
		sends := float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(sends, "msg/s")
		if routed > 0 {
			b.ReportMetric(sends/routed, "sends/routed")
			// The same ratio in CPU time: steadier on a shared machine,
			// and it counts both cores' work (the routed path runs the
			// router and the decode actors in parallel).
			b.ReportMetric(routedCPU/sendCPU, "cpu-sends/routed")
		}
		_ = sys.Root.StopFuture(pid).Wait()
	})
}

// cpuTime is the process's CPU time (user + system) so far: on a machine
// shared with other jobs it moves much less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

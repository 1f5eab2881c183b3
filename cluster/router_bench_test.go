package cluster

import (
	"testing"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/internal/routebench"
	"github.com/pdemu/pdemu/policy"
)

// BenchmarkRouterNode: what a routed request costs in the P/D router node
// itself (cluster router code and the KVC policy), without any actor
// runtime: BenchmarkRouterActor's request (64 sessions, 64 blocks each,
// 8 decode workers answering Direct at once) driven through Handle as
// NewJob → Admit → AdmitReply → Finished. ns/op is per routed request;
// divided by BenchmarkRouterActor's bare-send cpu-ns/op it is the router
// node's share of that benchmark's sends per routed request.
func BenchmarkRouterNode(b *testing.B) {
	const nd = 8
	reqs := routebench.Requests()
	k, err := policy.NewKVC(policy.KVCConfig{Alpha: 1, TauReject: 3, Epsilon: 2, Prefill: 1, Decode: nd})
	if err != nil {
		b.Fatal(err)
	}
	decode := make([]Addr, nd)
	for d := range decode {
		decode[d] = Addr(d + 1)
	}
	n := NewRouter(k, nil, decode)
	jobs := make([]gpu.Job, 4096)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		j := &jobs[i%len(jobs)]
		*j = gpu.Job{Req: reqs[i%len(reqs)], P: -1, D: -1}
		i++
		rd := n.Handle(time.Duration(i), NewJob{Job: j})
		if len(rd.Out) != 1 {
			b.Fatalf("router sent %d messages, want one Admit", len(rd.Out))
		}
		a := rd.Out[0].Msg.(Admit)
		d := int(rd.Out[0].To) - 1
		a.D, a.Mode = d, policy.ModeDirect
		n.Handle(time.Duration(i), AdmitReply{Admission: a.Admission})
		n.Handle(time.Duration(i), Finished{D: d})
	}
}

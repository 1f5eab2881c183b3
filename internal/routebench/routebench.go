// Package routebench holds the request set of the routed-request
// benchmarks, so that BenchmarkRouterActor (actors) and
// BenchmarkRouterNode (cluster), whose figures are divided by each other,
// route the same requests by construction.
//
// It is for _test.go files only (non-test code must not import it). It
// imports only workload, so the tests of any package above it can use it.
package routebench

import "github.com/pdemu/pdemu/workload"

// Requests returns the benchmarks' 1,024 requests: 64 sessions, each turn
// 64 blocks of 24 tokens (the session's own chain, so a session's turns
// share their whole prefix) and 10 output tokens.
func Requests() []*workload.Request {
	reqs := make([]*workload.Request, 1024)
	for i := range reqs {
		blocks := make([]uint64, 64)
		for j := range blocks {
			blocks[j] = uint64(i%64+1)<<32 | uint64(j+1)
		}
		reqs[i] = &workload.Request{ID: int64(i), Session: int32(i % 64), Turn: i / 64, InputLen: 64 * 24, OutputLen: 10, Blocks: blocks, BlockTokens: 24}
	}
	return reqs
}

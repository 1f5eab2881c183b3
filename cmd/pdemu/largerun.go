package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/topology"
)

// largeRunRequests is the number of requests from which pdemu run leaves
// routing_log.jsonl out unless it is asked for: the decision log is
// ~0.5-0.9 KB per request (577 MB at 1M requests) and 10-20 % of such a
// run's CPU time. (A variable so that a test can run a "large" run
// quickly.)
var largeRunRequests = 100_000

// expectedRequests is how many requests spec will release, when known
// before the run: --max-requests, or the agentic generator's sessions ×
// turns (the smaller of the two); 0 when unknown (a trace or another
// generator without --max-requests).
func expectedRequests(spec *topology.Spec) int {
	wl := spec.Workload
	n := 0
	if g := wl.Generator; wl.Trace == "" && (g.Kind == "" || g.Kind == "agentic") {
		n = g.Sessions * g.Turns
	}
	if m := wl.MaxRequests; m > 0 && (n == 0 || m < n) {
		n = m
	}
	return n
}

// largeRunOutputs applies the large-run default: for a run of at least
// largeRunRequests requests whose routing log was not asked for (asked:
// --outputs or --set router.routing_log=... was given), the P/D router
// keeps no decision log and outputs lists every file but
// routing_log.jsonl, so summary.json's outputs.written says so. note is
// the line to print then ("" otherwise).
//
// Whatever the run's size, when outputs (not nil: chosen) leaves
// routing_log.jsonl out, the router keeps no decision log either: no
// candidates explained, ranked or encoded for a file nobody writes.
func largeRunOutputs(spec *topology.Spec, outputs []string, asked bool) ([]string, string) {
	if outputs != nil && !slices.Contains(outputs, "routing_log.jsonl") {
		spec.Router.RoutingLog = false
	}
	n := expectedRequests(spec)
	if asked || outputs != nil || n < largeRunRequests {
		return outputs, ""
	}
	spec.Router.RoutingLog = false
	out := slices.DeleteFunc(slices.Clone(output.Files), func(f string) bool { return f == "routing_log.jsonl" })
	return out, fmt.Sprintf("pdemu: a large run (%d requests): routing_log.jsonl is not written "+
		"(summary.json outputs.written lists the files); --outputs all or --set router.routing_log=true writes it", n)
}

// routingLogAsked reports whether the command line asked for (or
// against) the routing log: --outputs or a --set of router.routing_log.
func routingLogAsked(outputsChanged bool, set []string) bool {
	if outputsChanged {
		return true
	}
	for _, s := range set {
		if p, _, _ := strings.Cut(s, "="); strings.TrimSpace(p) == "router.routing_log" {
			return true
		}
	}
	return false
}

package bench_test

import (
	"context"
	"flag"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/scenarios"
)

// countingNode counts the messages its node is delivered, by type and by
// the kind of node receiving them.
type countingNode struct {
	cluster.Node
	kind   string
	counts map[string]int64
	// coalescible counts the envelopes of one Handle that go to the same
	// address after the same delay as an earlier one of that Handle: the
	// messages one envelope per (address, delay) would save.
	coalescible *int64
}

func (n *countingNode) Handle(now time.Duration, msg any) cluster.Ready {
	n.counts[n.kind+" <- "+strings.TrimPrefix(strings.TrimPrefix(reflect.TypeOf(msg).String(), "*"), "cluster.")]++
	rd := n.Node.Handle(now, msg)
	for i, e := range rd.Out {
		for _, f := range rd.Out[:i] {
			if f.To == e.To && f.Delay == e.Delay {
				*n.coalescible++
				break
			}
		}
	}
	return rd
}

// -mix.w64 adds the 64-worker cluster of BenchmarkScaleWorkers to
// TestMessageMix (about 15 s).
var mixW64 = flag.Bool("mix.w64", false, "TestMessageMix: also count the 64-worker cluster (16P48D)")

// TestMessageMix tells where a run's messages go: every message the clock
// delivers, counted at its receiving node by type, per request. The
// counts add up to the run's own count (summary.json runtime.messages), so
// no message escapes the table; go test -v prints it (issue 24: which hops
// a protocol change could save).
func TestMessageMix(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole scenarios")
	}
	// workers > 0: BenchmarkScaleWorkers' cluster of that many workers
	// (the default scenario scaled, constant load per worker).
	for _, c := range []struct {
		name, scenario string
		workers        int
	}{
		{"default", scenarios.Default, 0},
		{"mooncake", "mooncake.hcl", 0},
		{"workers=16", "", 16},
		{"workers=64", "", 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.workers == 64 && !*mixW64 {
				t.Skip("-mix.w64 not given")
			}
			spec, ok := embeddedSpec(t, scenarios.Default)
			if c.workers > 0 {
				spec = scaleSpec(t, c.workers/4, 4*c.workers)
			} else {
				spec, ok = embeddedSpec(t, c.scenario)
			}
			if !ok {
				t.Skip("trace not on this machine (../shared/traces)")
			}
			counts := map[string]int64{}
			var coalescible int64
			wrap := func(cl *cluster.Cluster, _ func() time.Duration) error {
				for i, n := range cl.Nodes {
					cl.Nodes[i] = &countingNode{Node: n, kind: string(cl.Kinds[i]), counts: counts, coalescible: &coalescible}
				}
				return nil
			}
			res, err := actors.Run(context.Background(), spec, actors.Options{Wrap: wrap})
			require.NoError(t, err)
			var total int64
			type row struct {
				k string
				n int64
			}
			var rows []row
			for k, n := range counts {
				total += n
				rows = append(rows, row{k, n})
			}
			sort.Slice(rows, func(i, j int) bool {
				if rows[i].n != rows[j].n {
					return rows[i].n > rows[j].n
				}
				return rows[i].k < rows[j].k
			})
			require.Equal(t, res.Summary.Runtime.Messages, total, "every delivered message is counted")
			reqs := float64(res.Summary.Requests.Total)
			var b strings.Builder
			fmt.Fprintf(&b, "%s: %d messages, %d requests, %.2f messages/request, %d steps (%.3f messages/step)\n",
				c.name, total, res.Summary.Requests.Total, float64(total)/reqs, res.Summary.Runtime.Steps,
				float64(total)/float64(res.Summary.Runtime.Steps))
			for _, r := range rows {
				fmt.Fprintf(&b, "  %-32s %8d  %6.2f/req  %5.1f%%\n", r.k, r.n, float64(r.n)/reqs, 100*float64(r.n)/float64(total))
			}
			fmt.Fprintf(&b, "  one envelope per (address, delay) of a Handle would save %d messages (%.1f%%, %.2f/req)\n",
				coalescible, 100*float64(coalescible)/float64(total), float64(coalescible)/reqs)
			t.Log(b.String())
		})
	}
}

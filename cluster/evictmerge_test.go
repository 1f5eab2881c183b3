package cluster

import (
	"cmp"
	"slices"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/metrics"
)

// TestMergeByTimeIsStableSort: merging the nodes' eviction rows gives
// what a stable sort by time of their concatenation (decode rows named by
// their worker) gives, in one exactly-sized slice, whether the nodes' own
// rows are in time order (merged) or not (sorted).
func TestMergeByTimeIsStableSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var rows []metrics.EvictionRow
		var runs []evRun
		ordered := rapid.Bool().Draw(t, "ordered")
		for node := range rapid.IntRange(0, 7).Draw(t, "nodes") {
			named := rapid.Bool().Draw(t, "named")
			runs = append(runs, evRun{name: "w" + strconv.Itoa(node), named: named})
			at := time.Duration(0)
			for i := range rapid.IntRange(0, 6).Draw(t, "rows") {
				if ordered {
					at += time.Duration(rapid.IntRange(0, 2).Draw(t, "step"))
				} else {
					at = time.Duration(rapid.IntRange(0, 5).Draw(t, "at"))
				}
				r := metrics.EvictionRow{At: at, Session: strconv.Itoa(node) + "/" + strconv.Itoa(i)}
				runs[node].rows = append(runs[node].rows, r)
				if named {
					r.Worker = "w" + strconv.Itoa(node)
				}
				rows = append(rows, r)
			}
		}
		want := slices.Clone(rows)
		slices.SortStableFunc(want, func(a, b metrics.EvictionRow) int { return cmp.Compare(a.At, b.At) })
		got := mergeByTime(runs, len(rows))
		if cap(got) != len(rows) {
			t.Fatalf("cap %d for %d rows", cap(got), len(rows))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("merged %v\nwant   %v", got, want)
		}
	})
}

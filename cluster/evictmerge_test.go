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
// what a stable sort by time of their concatenation gives, whether the
// nodes' own rows are in time order (merged) or not (sorted).
func TestMergeByTimeIsStableSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var rows []metrics.EvictionRow
		var runs []int
		ordered := rapid.Bool().Draw(t, "ordered")
		for node := range rapid.IntRange(0, 7).Draw(t, "nodes") {
			runs = append(runs, len(rows))
			at := time.Duration(0)
			for i := range rapid.IntRange(0, 6).Draw(t, "rows") {
				if ordered {
					at += time.Duration(rapid.IntRange(0, 2).Draw(t, "step"))
				} else {
					at = time.Duration(rapid.IntRange(0, 5).Draw(t, "at"))
				}
				rows = append(rows, metrics.EvictionRow{At: at, Session: strconv.Itoa(node) + "/" + strconv.Itoa(i)})
			}
		}
		want := slices.Clone(rows)
		slices.SortStableFunc(want, func(a, b metrics.EvictionRow) int { return cmp.Compare(a.At, b.At) })
		got := mergeByTime(rows, runs)
		if !slices.Equal(got, want) {
			t.Fatalf("merged %v\nwant   %v", got, want)
		}
	})
}

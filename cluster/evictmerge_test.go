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
// rows are in time order (merged) or not (sorted), and whether a node
// keeps them in a slice (the reference) or in a compact log.
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
		for i := range runs {
			if rapid.Bool().Draw(t, "log") {
				l := &evictLog{}
				for _, r := range runs[i].rows {
					l.add(r)
				}
				runs[i].rows, runs[i].log = nil, l
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

// TestEvictLogEqualsRows: a log reads back exactly the rows added, in
// order (any times, sessions, tokens, causes and requests, extreme values
// and chunk boundaries included), as the per-row slice it replaces did,
// and knows whether they were in time order.
func TestEvictLogEqualsRows(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var ref []metrics.EvictionRow
		l := &evictLog{}
		n := rapid.IntRange(0, 3000).Draw(t, "n")
		causes := []string{"capacity", "transfer-failed", "session-end", "worker-crashed", ""}
		at := time.Duration(0)
		sortedRef := true
		for i := range n {
			switch rapid.IntRange(0, 9).Draw(t, "atKind") {
			case 0:
				at = time.Duration(rapid.Int64().Draw(t, "atAny"))
			case 1:
				at -= time.Duration(rapid.Int64Range(0, 1e9).Draw(t, "back"))
			default:
				at += time.Duration(rapid.Int64Range(0, 1e10).Draw(t, "step"))
			}
			r := metrics.EvictionRow{At: at, Session: "s" + strconv.Itoa(rapid.IntRange(0, 50).Draw(t, "sess")),
				Tokens: rapid.Int().Draw(t, "tokens"), Cause: rapid.SampledFrom(causes).Draw(t, "cause"),
				For: rapid.Int64Range(-1, 1<<40).Draw(t, "for")}
			if i%97 == 0 {
				r.For = rapid.Int64().Draw(t, "forAny")
			}
			if len(ref) > 0 && r.At < ref[len(ref)-1].At {
				sortedRef = false
			}
			ref = append(ref, r)
			l.add(r)
		}
		if l.len() != len(ref) {
			t.Fatalf("len %d, want %d", l.len(), len(ref))
		}
		var got []metrics.EvictionRow
		c := l.cursor()
		for r, ok := c.next(); ok; r, ok = c.next() {
			got = append(got, r)
		}
		if !slices.Equal(got, ref) {
			t.Fatalf("read back %d rows, differ from the %d added", len(got), len(ref))
		}
		if l.unsorted == sortedRef {
			t.Fatalf("unsorted = %v for rows sorted = %v", l.unsorted, sortedRef)
		}
	})
}

package output

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestReorderEmitsInIDOrder: entries added in any order, some ids never
// added (a partial run's requests read but never released), come out
// once each in id order with their bytes, whatever the bound; a small
// bound spills runs to disk and removes the file on close. Entries are
// emitted as soon as the ids below them are.
func TestReorderEmitsInIDOrder(t *testing.T) {
	dir := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(t, "n")
		ids := make([]int64, 0, n)
		for i := 0; i < n; i++ {
			if rapid.IntRange(0, 9).Draw(t, "gap") != 0 {
				ids = append(ids, int64(i))
			}
		}
		order := rapid.Permutation(ids).Draw(t, "order")
		bound := rapid.SampledFrom([]int{1, 200, 4 << 10, 1 << 20}).Draw(t, "bound")
		added := map[int64]bool{}
		var got []int64
		emit := func(id int64, row, log []byte) error {
			if want := reorderRow(nil, id); string(row) != string(want) {
				return fmt.Errorf("id %d: row %q", id, row)
			}
			if want := fmt.Sprintf(`{"id":%d}`, id); id%3 != 0 && string(log) != want || id%3 == 0 && len(log) != 0 {
				return fmt.Errorf("id %d: log %q", id, log)
			}
			got = append(got, id)
			return nil
		}
		spill := func() (*os.File, error) { return os.CreateTemp(dir, "spill-*") }
		ro := newReorder(0, bound, emit, spill)
		var scratch []byte // the row buffer the caller reuses, as Stream does
		for _, id := range order {
			var log []byte
			if id%3 != 0 {
				log = []byte(fmt.Sprintf(`{"id":%d}`, id))
			}
			scratch = reorderRow(scratch[:0], id)
			if err := ro.add(id, scratch, log); err != nil {
				t.Fatal(err)
			}
			added[id] = true
			// Everything below the first id not added yet is out.
			low := int64(0)
			for added[low] {
				low++
			}
			if int64(len(got)) < low && len(got) < len(added) {
				// got must hold exactly 0..low-1 (ids are dense up to low).
				t.Fatalf("after adding %d: emitted %d entries, ids below %d all added", id, len(got), low)
			}
		}
		if err := ro.finish(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ids) {
			t.Fatalf("emitted %d of %d", len(got), len(ids))
		}
		for i := range got {
			if got[i] != ids[i] {
				t.Fatalf("emitted %v, want %v", got, ids)
			}
		}
		if bound == 1 && ro.spilled == 0 && len(got) > 1 && !sorted(order) {
			t.Fatalf("a 1-byte bound did not spill")
		}
		if err := ro.close(); err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("spill file left: %v", ents)
		}
	})
}

func sorted(ids []int64) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] < ids[i-1] {
			return false
		}
	}
	return true
}

// reorderRow appends id's row: a short one, or for every 7th id one longer
// than reorder.keep cuts from its chunks.
func reorderRow(b []byte, id int64) []byte {
	b = fmt.Appendf(b, "row%d", id)
	if id%7 == 0 {
		b = append(b, strings.Repeat("x", rowChunk/4)...)
	}
	return append(b, '\n')
}

package output

import (
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPendingMatchesMap: pending against a map of entries (the structure
// it replaced) under random puts near and far beyond ringMax, takes at a
// growing next, gets, ids and resets.
func TestPendingMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var p pending
		ref := map[int64]int{}
		next := int64(0)
		tag := 0
		for range rapid.IntRange(0, 400).Draw(t, "steps") {
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3, 4: // put near next, or past the ring's reach
				span := rapid.SampledFrom([]int64{4, 300, 3 * ringMax}).Draw(t, "span")
				id := next + rapid.Int64Range(0, span).Draw(t, "d")
				if _, ok := ref[id]; ok {
					continue
				}
				tag++
				ref[id] = tag
				p.put(id, entry{row: []byte{byte(tag), byte(tag >> 8)}})
			case 5, 6, 7: // take next, then move on
				e, ok := p.take(next)
				want, wok := ref[next]
				if ok != wok || ok && int(e.row[0])|int(e.row[1])<<8 != want {
					t.Fatalf("take(%d) = %v %v, want %v %v", next, e.row, ok, want, wok)
				}
				delete(ref, next)
				next++
				if rapid.IntRange(0, 4).Draw(t, "jump") == 0 {
					// A long gap of ids that never come: up to the lowest held.
					to := next + rapid.Int64Range(0, 2*ringMax).Draw(t, "gap")
					for id := range ref {
						to = min(to, id)
					}
					next = to
				}
			case 8:
				got := p.ids()
				want := slices.Sorted(maps.Keys(ref))
				if !slices.Equal(got, want) {
					t.Fatalf("ids %v, want %v", got, want)
				}
				for _, id := range want {
					if e := p.get(id); !e.set || int(e.row[0])|int(e.row[1])<<8 != ref[id] {
						t.Fatalf("get(%d) = %v", id, e)
					}
				}
			case 9:
				p.reset()
				clear(ref)
			}
		}
	})
}

package idmap

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestWindowEqualsMap: any sequence of puts, deletes and gets on a Window
// agrees with a Go map, and Ascend lists the map's keys in order. Ids are
// drawn mostly near a moving front (the layout Window is made for), some
// behind it, some far off (the map's share).
func TestWindowEqualsMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var w Window[int]
		ref := map[int64]int{}
		front := int64(0)
		var used []int64
		for i := range rapid.IntRange(0, 400).Draw(t, "ops") {
			var id int64
			switch rapid.IntRange(0, 11).Draw(t, "kind") {
			case 10, 11: // an id seen before, which the ring may have moved to or away from
				if len(used) == 0 {
					continue
				}
				id = used[rapid.IntRange(0, len(used)-1).Draw(t, "reuse")]
			case 0:
				id = rapid.Int64Range(-1<<40, 1<<40).Draw(t, "far")
			case 1:
				id = front - rapid.Int64Range(0, 2*windowMax).Draw(t, "behind")
			default:
				id = front + rapid.Int64Range(-70, 70).Draw(t, "near")
			}
			used = append(used, id)
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				w.Put(id, i)
				ref[id] = i
				front = max(front, id)
			case 1:
				w.Delete(id)
				delete(ref, id)
			}
			v, ok := w.Get(id)
			rv, rok := ref[id]
			require.Equal(t, rok, ok, "id %d", id)
			require.Equal(t, rv, v, "id %d", id)
			require.Equal(t, len(ref), w.Len())
		}
		var got []int64
		w.Ascend(func(id int64, v int) bool {
			require.Equal(t, ref[id], v)
			got = append(got, id)
			return true
		})
		require.Equal(t, slices.Sorted(maps.Keys(ref)), got)
		for id, v := range ref {
			g, ok := w.Get(id)
			require.True(t, ok)
			require.Equal(t, v, g)
		}
	})
}

// TestDenseEqualsMap: as TestWindowEqualsMap for Dense.
func TestDenseEqualsMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var d Dense[string]
		ref := map[int32]string{}
		for range rapid.IntRange(0, 300).Draw(t, "ops") {
			var i int32
			if rapid.Bool().Draw(t, "dense") {
				i = rapid.Int32Range(0, 200).Draw(t, "i")
			} else {
				i = rapid.Int32().Draw(t, "any")
			}
			v := rapid.StringN(0, 3, 3).Draw(t, "v")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				d.Put(i, v)
				ref[i] = v
			case 1:
				d.Delete(i)
				delete(ref, i)
			}
			g, ok := d.Get(i)
			r, rok := ref[i]
			require.Equal(t, rok, ok)
			require.Equal(t, r, g)
			require.Equal(t, len(ref), d.Len())
		}
		var got []int32
		for i, v := range d.All() {
			require.Equal(t, ref[i], v)
			got = append(got, i)
		}
		require.Equal(t, slices.Sorted(maps.Keys(ref)), got)
	})
}

// TestWindowAscendStops: Ascend stops at the first false.
func TestWindowAscendStops(t *testing.T) {
	var w Window[int]
	for _, id := range []int64{5, 1 << 50, 3, -7} {
		w.Put(id, int(id))
	}
	var got []int64
	w.Ascend(func(id int64, _ int) bool { got = append(got, id); return len(got) < 2 })
	require.Equal(t, []int64{-7, 3}, got)
}

// TestWindowFarThenRing: an id first kept in the map (out of the ring's
// reach) and later put again once the ring reached it lives in one place.
func TestWindowFarThenRing(t *testing.T) {
	var w Window[int]
	w.Put(0, 1)
	w.Put(3*windowMax, 2) // beyond the span: the map
	w.Delete(0)           // the ring is empty
	w.Put(3*windowMax, 3) // the ring starts there now
	w.Delete(3 * windowMax)
	_, ok := w.Get(3 * windowMax)
	require.False(t, ok)
	require.Zero(t, w.Len())
}

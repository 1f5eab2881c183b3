package minheap

import (
	"container/heap"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/effect"
)

// kv orders by k only, so equal keys with different v show whether ties
// come out in container/heap's order.
type kv struct{ k, v int }

func lessKV(a, b *kv) bool { return a.k < b.k }

// ref is the same heap through container/heap: the reference.
type ref []kv

func (h ref) Len() int           { return len(h) }
func (h ref) Less(i, j int) bool { return h[i].k < h[j].k }
func (h ref) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *ref) Push(x any)        { *h = append(*h, x.(kv)) }
func (h *ref) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// TestMatchesContainerHeap: any sequence of Init, Push, Pop and Fix(0)
// gives the pops container/heap gives, ties included, and a sorted output
// when the keys are distinct.
func TestMatchesContainerHeap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		key := rapid.IntRange(0, 8) // few keys: many ties
		init := rapid.SliceOf(rapid.Custom(func(t *rapid.T) kv { return kv{key.Draw(t, "k"), 0} })).Draw(t, "init")
		for i := range init {
			init[i].v = i
		}
		h := New(lessKV)
		h.Init(slices.Clone(init))
		r := ref(slices.Clone(init))
		heap.Init(&r)
		next := len(init)
		for _, op := range rapid.SliceOf(rapid.IntRange(0, 2)).Draw(t, "ops") {
			switch {
			case op == 0:
				e := kv{key.Draw(t, "push"), next}
				next++
				h.Push(e)
				heap.Push(&r, e)
			case op == 1 && h.Len() > 0:
				require.Equal(t, heap.Pop(&r), h.Pop())
			case op == 2 && h.Len() > 0:
				k := key.Draw(t, "fix")
				h.Min().k, r[0].k = k, k
				h.Fix(0)
				heap.Fix(&r, 0)
			}
			require.Equal(t, r.Len(), h.Len())
			require.Equal(t, []kv(r), h.Items())
		}
		for h.Len() > 0 {
			require.Equal(t, heap.Pop(&r), h.Pop())
		}
	})
}

func TestSorts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := rapid.SliceOf(rapid.Int()).Draw(t, "xs")
		h := New(func(a, b *int) bool { return *a < *b })
		for _, x := range xs {
			h.Push(x)
		}
		var out []int
		for h.Len() > 0 {
			out = append(out, h.Pop())
		}
		want := slices.Clone(xs)
		slices.Sort(want)
		assert.Equal(t, len(want), len(out))
		if len(want) > 0 {
			assert.Equal(t, want, out)
		}
	})
}

func TestReset(t *testing.T) {
	h := New(lessKV)
	h.Push(kv{1, 1})
	h.Push(kv{0, 2})
	h.Reset()
	assert.Equal(t, 0, h.Len())
	h.Push(kv{3, 3})
	assert.Equal(t, kv{3, 3}, h.Pop())
}

// event is the virtual clock's 48-byte event shape.
type event struct {
	effect.Stamp
	to  *int
	msg any
}

func lessEvent(a, b *event) bool { return a.Before(&b.Stamp) }

// BenchmarkPushPop: the virtual clock's hot path shape (push one event,
// pop the least) on a heap of 1,024 events.
func BenchmarkPushPop(b *testing.B) {
	h := New(lessEvent)
	var seq uint64
	for i := range 1024 {
		seq++
		h.Push(event{Stamp: effect.Stamp{At: time.Duration(i * 7919 % 1024), From: int32(i % 13), Seq: seq}})
	}
	b.ReportAllocs()
	for b.Loop() {
		ev := h.Pop()
		seq++
		ev.At += time.Duration(seq % 977)
		ev.Seq = seq
		h.Push(ev)
	}
}

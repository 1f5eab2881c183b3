package freelist

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPopIsLIFOAndClearsTheSlot(t *testing.T) {
	a, b := new(int), new(int)
	s := []*int{a, b}
	back := s[:2]
	v, ok := Pop(&s)
	require.True(t, ok)
	assert.Same(t, b, v, "the last freed comes back first")
	assert.Nil(t, back[1], "the popped slot no longer holds the pointer")
	v, ok = Pop(&s)
	require.True(t, ok)
	assert.Same(t, a, v)
	v, ok = Pop(&s)
	assert.False(t, ok)
	assert.Nil(t, v)
	assert.Empty(t, s)
}

func TestPopOnNilIsEmpty(t *testing.T) {
	var s []int32
	v, ok := Pop(&s)
	assert.False(t, ok)
	assert.Zero(t, v)
}

func BenchmarkPop(b *testing.B) {
	b.ReportAllocs()
	s := make([]int32, 0, 1024)
	for b.Loop() {
		for i := range int32(1024) {
			s = append(s, i)
		}
		for {
			if _, ok := Pop(&s); !ok {
				break
			}
		}
	}
}

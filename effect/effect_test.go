package effect_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pdemu/pdemu/effect"
)

// TestTake: Take hands the outputs over with the wake-up and empties the
// buffer while keeping its backing array (no allocation on reuse).
func TestTake(t *testing.T) {
	buf := make([]int, 0, 4)
	buf = append(buf, 1, 2)
	r := effect.Take(&buf, 7, true)
	assert.Equal(t, effect.Ready[int]{Out: []int{1, 2}, Wake: 7, HasWake: true}, r)
	assert.Empty(t, buf)
	assert.Equal(t, 4, cap(buf))
	buf = append(buf, 3)
	r = effect.Take(&buf, 0, false)
	assert.Equal(t, []int{3}, r.Out)
	assert.False(t, r.HasWake)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		buf = append(buf, 4)
		_ = effect.Take(&buf, 1, true)
	}))
}

// TestStampBefore: the delivery order is by due time, then sender, then
// the sender's send counter, and strict (a stamp is not before itself).
func TestStampBefore(t *testing.T) {
	s := effect.Stamp{At: 5, From: 2, Seq: 7}
	for _, tc := range []struct {
		name string
		o    effect.Stamp
		want bool
	}{
		{"later due", effect.Stamp{At: 6, From: 0, Seq: 0}, true},
		{"earlier due", effect.Stamp{At: 4, From: 9, Seq: 9}, false},
		{"same due, later sender", effect.Stamp{At: 5, From: 3, Seq: 0}, true},
		{"same due, earlier sender", effect.Stamp{At: 5, From: 1, Seq: 99}, false},
		{"same sender, later send", effect.Stamp{At: 5, From: 2, Seq: 8}, true},
		{"same sender, earlier send", effect.Stamp{At: 5, From: 2, Seq: 6}, false},
		{"itself", s, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, s.Before(&tc.o))
			if tc.o != s {
				assert.Equal(t, !tc.want, tc.o.Before(&s), "the order is total")
			}
		})
	}
}

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

package topology

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSampleIntervalBound(t *testing.T) {
	// Within the bound: unchanged.
	assert.Equal(t, time.Second, SampleInterval(time.Second, 4, time.Hour))
	assert.Equal(t, time.Second, SampleInterval(time.Second, 0, 0))
	// 1 ms over a 1 h run on 100 workers is 360M rows: widened to a whole
	// multiple of 1 ms that keeps the rows within MaxSampleRows.
	got := SampleInterval(time.Millisecond, 100, time.Hour)
	assert.Zero(t, got%time.Millisecond)
	assert.LessOrEqual(t, int64(100)*int64(time.Hour/got), int64(MaxSampleRows))
	assert.Greater(t, int64(100)*int64(time.Hour/(got-time.Millisecond)), int64(MaxSampleRows), "the smallest such multiple")
	// The 9.1 GB case of issue 11: any horizon stays bounded.
	for _, h := range []time.Duration{time.Minute, 100 * time.Hour, MaxDuration} {
		iv := SampleInterval(MinSampleInterval, 8, h)
		assert.LessOrEqual(t, int64(8)*int64(h/iv), int64(MaxSampleRows), h)
	}
	assert.Equal(t, MinSampleInterval, SampleInterval(time.Microsecond, 1, time.Second), "never below the minimum")
}

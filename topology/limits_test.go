package topology

import (
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pdemu/pdemu/scenarios"
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

// TestShippedScenariosPassCheckSource: every embedded .hcl file passes
// checkSource, which layer skips for them (shipped); a file named like
// an embedded one but with other bytes is still checked.
func TestShippedScenariosPassCheckSource(t *testing.T) {
	n := 0
	err := fs.WalkDir(scenarios.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".hcl" {
			return err
		}
		src, err := fs.ReadFile(scenarios.FS, p)
		if err != nil {
			return err
		}
		n++
		assert.False(t, checkSource(EmbeddedPrefix+p, src).HasErrors(), p)
		assert.True(t, shipped(EmbeddedPrefix+p, src), p)
		assert.False(t, shipped(EmbeddedPrefix+p, append(src, ' ')), p)
		assert.False(t, shipped(p, src), "a file on disk: %s", p)
		return nil
	})
	assert.NoError(t, err)
	assert.Greater(t, n, 10)

	deep := []byte("x = " + strings.Repeat("[", MaxNesting+1) + strings.Repeat("]", MaxNesting+1) + "\n")
	_, err = Parse(EmbeddedPrefix+"1p3d-mlx5.hcl", deep, Options{})
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "nested too deeply")
	}
}

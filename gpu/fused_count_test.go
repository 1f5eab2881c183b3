package gpu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestFusedEvictedCountOnly: a worker with EvictedCountOnly reports the
// same events at the same times as one without, every EvBlocksEvicted
// with the same Tokens but no Blocks; with TrackCache it keeps the
// hashes (the option has no effect).
func TestFusedEvictedCountOnly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		budget := rapid.IntRange(200, 2000).Draw(t, "budget")
		track := rapid.Bool().Draw(t, "track")
		mk := func(countOnly bool) *FusedWorker {
			f, err := NewFusedWorker(FusedConfig{Name: "f", Budget: budget, Rho: 1, TrackCache: track,
				EvictedCountOnly: countOnly}, linearCost{})
			require.NoError(t, err)
			return f
		}
		full, count := mk(false), mk(true)
		now := time.Duration(0)
		turn := map[int32]int{}
		for i := range rapid.IntRange(1, 40).Draw(t, "requests") {
			s := int32(rapid.IntRange(0, 5).Draw(t, "session"))
			turn[s]++
			in := 10 * rapid.IntRange(1, budget/20).Draw(t, "blocks")
			now += time.Duration(rapid.IntRange(0, 2000).Draw(t, "gap_ms")) * time.Millisecond
			r := req(int64(i), s, turn[s], in, rapid.IntRange(1, 20).Draw(t, "out"))
			full.Submit(now, &Job{Req: r})
			count.Submit(now, &Job{Req: r})
			full.Advance(now)
			count.Advance(now)
			a, b := full.Ready(), count.Ready()
			require.Equal(t, a.Wake, b.Wake)
			require.Equal(t, a.HasWake, b.HasWake)
			require.Len(t, b.Out, len(a.Out))
			for k, ea := range a.Out {
				eb := b.Out[k]
				require.Equal(t, ea.Kind, eb.Kind)
				require.Equal(t, ea.At, eb.At)
				require.Equal(t, ea.Tokens, eb.Tokens)
				if ea.Kind == EvBlocksEvicted && !track {
					require.Nil(t, eb.Blocks)
				} else {
					require.Equal(t, ea.Blocks, eb.Blocks)
				}
			}
		}
	})
}

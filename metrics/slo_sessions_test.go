package metrics

import (
	"testing"

	"pgregory.net/rapid"
)

// TestSessVerdictsEqualsMap: the per-session verdicts count the sessions
// seen and those with no missed request as a map of "missed" by session
// does, for indices in the slice, negative ones and ones past its reach.
func TestSessVerdictsEqualsMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var v sessVerdicts
		ref := map[int32]bool{}
		sess := rapid.SampledFrom([]int32{0, 1, 2, 7, 300, -1, -5, denseSessions - 1, denseSessions, 1<<31 - 1})
		for range rapid.IntRange(0, 200).Draw(t, "n") {
			s, met := sess.Draw(t, "sess"), rapid.Bool().Draw(t, "met")
			v.add(s, met)
			ref[s] = ref[s] || !met
		}
		met := 0
		for _, missed := range ref {
			if !missed {
				met++
			}
		}
		if v.n != len(ref) || v.met != met {
			t.Fatalf("sessions %d met %d, want %d %d", v.n, v.met, len(ref), met)
		}
	})
}

package topology

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// drawCrashesRef is the original quadratic crash draw of DrawChaos (every
// new crash checked against every crash of the node): the reference the
// linear one must equal.
func drawCrashesRef(fs []NodeFault, ats []time.Duration, ra time.Duration) []NodeFault {
	out := slices.Clone(fs)
	for _, at := range ats {
		f := NodeFault{Kind: FaultCrash, At: at, For: ra, Chaos: true}
		skip := false
		for _, g := range out {
			if g.Kind == FaultCrash && (g.For == 0 || at <= g.End()) && g.At <= f.End() {
				skip = true
				break
			}
		}
		if !skip {
			out = append(out, f)
			sortNodeFaults(out)
		}
	}
	return out
}

// TestDrawChaosCrashesMatchReference: the linear draw keeps exactly the
// crashes the quadratic one kept, over random hand-written schedules.
func TestDrawChaosCrashesMatchReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ra := time.Duration(rapid.Int64Range(1, 20).Draw(rt, "ra")) * time.Second
		k := Chaos{Seed: rapid.Uint64().Draw(rt, "seed"), Horizon: time.Duration(rapid.Int64Range(1, 600).Draw(rt, "h")) * time.Second,
			RestartAfter: ra, MTBFDecode: time.Duration(rapid.Int64Range(1, 60).Draw(rt, "mtbf")) * time.Second}
		var hand []NodeFault
		at := time.Duration(0)
		for range rapid.IntRange(0, 6).Draw(rt, "crashes") {
			at += time.Duration(rapid.Int64Range(0, 100).Draw(rt, "gap")) * time.Second
			d := time.Duration(rapid.Int64Range(0, 30).Draw(rt, "for")) * time.Second
			hand = append(hand, NodeFault{Kind: FaultCrash, At: at, For: d})
			if d == 0 {
				break // a permanent crash is the last
			}
			at += d + time.Second
		}
		if rapid.Bool().Draw(rt, "slow") {
			hand = append(hand, NodeFault{Kind: FaultSlow, At: 5 * time.Second, For: time.Minute, Factor: 2})
		}
		sortNodeFaults(hand)
		spec := &Spec{Decode: []Worker{{Name: "d0", Faults: slices.Clone(hand)}}}
		require.True(rt, DrawChaos(spec, k))
		// The drawn times do not depend on the hand-written faults: take
		// them from the same draw on a node without any.
		free := &Spec{Decode: []Worker{{Name: "d0"}}}
		DrawChaos(free, k)
		var ats []time.Duration
		for _, f := range free.Decode[0].Faults {
			ats = append(ats, f.At)
		}
		require.Equal(rt, drawCrashesRef(hand, ats, ra), spec.Decode[0].Faults)
	})
}

// TestChaosNeverAltersHandWrittenLinkFaults: a drawn restore never ends a
// hand-written cut or degradation (a chaos restore used to end a
// permanent cut and undo a degradation).
func TestChaosNeverAltersHandWrittenLinkFaults(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		hand := []LinkFault{{At: 30 * time.Second, Kind: FaultDegrade, Factor: 0.5}, {At: 60 * time.Second, Kind: FaultRestore},
			{At: 100 * time.Second, Kind: FaultCut}}
		k := Chaos{Seed: rapid.Uint64().Draw(rt, "seed"), Horizon: 200 * time.Second, RestartAfter: 3 * time.Second, MTBFLink: time.Second}
		spec := &Spec{Links: []Link{{Faults: slices.Clone(hand)}}}
		require.True(rt, DrawChaos(spec, k))
		n := 0
		for _, f := range spec.Links[0].Faults {
			if !f.Chaos {
				continue
			}
			n++
			in := (f.At >= 30*time.Second && f.At <= 60*time.Second) || f.At >= 100*time.Second
			assert.False(rt, in, "a drawn %s at %v inside a hand-written fault's window", f.Kind, f.At)
		}
		assert.Greater(rt, n, 0, "an MTBF of 1 s draws outside the windows too")
	})
}

// TestChaosBounded: a short MTBF over a long horizon is refused at once
// (the quadratic draw ran validate for over 10 minutes).
func TestChaosBounded(t *testing.T) {
	src := minimal + "chaos {\n  horizon = \"8760h\"\n  mtbf_decode = \"1ms\"\n}\n"
	msg := parseErr(t, src, Options{})
	assert.Contains(t, msg, "Too many chaos faults")
	assert.Contains(t, msg, "test.hcl:")
	k := Chaos{Seed: 1, Horizon: 1000 * time.Hour, RestartAfter: time.Millisecond, MTBFDecode: time.Millisecond}
	assert.False(t, DrawChaos(&Spec{Decode: []Worker{{Name: "d"}}}, k), "DrawChaos stops at MaxChaosFaults")
	assert.Greater(t, chaosCount(&Spec{Decode: []Worker{{Name: "d"}}}, k), float64(MaxChaosFaults))
}

// TestRestartAfterZeroRefused: restart_after = "0s" meant "never restarts".
func TestRestartAfterZeroRefused(t *testing.T) {
	src := strings.Replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  crash {\n    at = \"1s\"\n    restart_after = \"0s\"\n  }", 1)
	msg := parseErr(t, src, Options{})
	assert.Contains(t, msg, "never restarts")
	ok := strings.Replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  crash {\n    at = \"1s\"\n    restart_after = \"1ms\"\n  }", 1)
	spec := mustParse(t, ok, Options{})
	require.Len(t, spec.Decode[0].Faults, 1)
	assert.Equal(t, time.Millisecond, spec.Decode[0].Faults[0].For)
}

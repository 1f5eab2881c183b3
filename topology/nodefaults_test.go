package topology

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNodeFaults: crash, slow, flap, recovery and chaos blocks parse into
// the Spec, in time order.
func TestNodeFaults(t *testing.T) {
	src := replace(replace(minimal, `decode "d0" {`, `decode "d0" {
  slow {
    at       = "5s"
    factor   = 3
    duration = "10s"
  }
  crash {
    at            = "30s"
    restart_after = "20s"
  }
  crash { at = "90s" }`), `bandwidth = "200Gbps"`, `bandwidth = "200Gbps"
  fault {
    at    = "10s"
    flap  = "2s"
    flaps = 2
  }`) + `
recovery {
  detection_delay = "250ms"
  retry_budget    = 5
}
`
	spec := mustParse(t, src, Options{})
	assert.Equal(t, []NodeFault{
		{Kind: FaultSlow, At: 5 * time.Second, For: 10 * time.Second, Factor: 3},
		{Kind: FaultCrash, At: 30 * time.Second, For: 20 * time.Second},
		{Kind: FaultCrash, At: 90 * time.Second},
	}, spec.Decode[0].Faults)
	assert.Equal(t, []LinkFault{
		{At: 10 * time.Second, Kind: FaultCut}, {At: 12 * time.Second, Kind: FaultRestore},
		{At: 14 * time.Second, Kind: FaultCut}, {At: 16 * time.Second, Kind: FaultRestore},
	}, spec.Links[0].Faults)
	assert.Equal(t, Recovery{DetectionDelay: 250 * time.Millisecond, RetryBudget: 5}, spec.Recovery)
	assert.Equal(t, DefaultRecovery(), mustParse(t, minimal, Options{}).Recovery)
	assert.Nil(t, spec.Chaos)
}

// TestChaos: the chaos block's draws are deterministic per seed, never
// overlap a node's crashes and stay within the horizon.
func TestChaos(t *testing.T) {
	mk := func(seed int) *Spec {
		return mustParse(t, p0+d0+d1+l00+l01+kvc+fmt.Sprintf(`
chaos {
  seed          = %d
  horizon       = "600s"
  restart_after = "20s"
  mtbf_decode   = "100s"
  mtbf_link     = "300s"
}
`, seed), Options{})
	}
	a, b, c := mk(1), mk(1), mk(2)
	assert.Equal(t, a.Decode, b.Decode)
	assert.Equal(t, a.Links, b.Links)
	assert.NotEqual(t, a.Decode, c.Decode)
	require.NotNil(t, a.Chaos)
	n := 0
	for _, w := range a.Decode {
		var end time.Duration = -1
		for _, f := range w.Faults {
			n++
			assert.True(t, f.Chaos)
			assert.Equal(t, FaultCrash, f.Kind)
			assert.Greater(t, f.At, end, "crashes of %s overlap", w.Name)
			assert.LessOrEqual(t, f.At, 600*time.Second)
			end = f.End()
		}
	}
	assert.Greater(t, n, 4, "about 6 crashes per decode worker in 600s at an MTBF of 100s")
}

// TestNodeFaultDiagnostics: bad fault blocks point at the line at fault.
func TestNodeFaultDiagnostics(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"slow factor not above 1", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  slow {\n    at = \"1s\"\n    factor = 0.5 #!\n  }"),
			[]string{`Invalid value for "factor"`, "greater than 1"}},
		{"overlapping crashes", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  crash { at = \"1s\" }\n  crash { at = \"5s\" } #!"),
			[]string{"Overlapping crashes", "still down"}},
		{"negative restart", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  crash {\n    at = \"1s\"\n    restart_after = \"-1s\" #!\n  }"),
			[]string{`"restart_after"`}},
		{"flaps without flap", replace(minimal, `bandwidth = "200Gbps"`, "bandwidth = \"200Gbps\"\n  fault {\n    at = \"1s\"\n    flaps = 3 #!\n  }"),
			[]string{`"flaps" without "flap"`}},
		{"empty chaos", minimal + "chaos { #!\n  horizon = \"10s\"\n}\n", []string{"Empty chaos block"}},
		{"duplicate recovery", minimal + "recovery {}\nrecovery {} #!\n", []string{"Duplicate recovery block"}},
		{"retry budget", minimal + "recovery {\n  retry_budget = -1 #!\n}\n", []string{`Invalid value for "retry_budget"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkMarkedDiag(t, tc.src, Options{}, tc.want)
		})
	}
}

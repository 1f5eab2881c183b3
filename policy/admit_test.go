package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdmit walks every branch of Algorithm 2.
func TestAdmit(t *testing.T) {
	base := AdmitInput{Budget: 1000, Rho: 0.9, TauAppend: 100} // ρ·K_d = 900
	with := func(f func(*AdmitInput)) AdmitInput { in := base; f(&in); return in }
	cases := []struct {
		name   string
		in     AdmitInput
		mode   Mode
		reason string
	}{
		{"line 5: resident, small append, capacity → Direct",
			with(func(in *AdmitInput) { in.Resident, in.Turn, in.AppendLen, in.InputLen, in.Used = true, 3, 50, 400, 100 }), ModeDirect, ""},
		{"line 4: append == τ_append is still Direct",
			with(func(in *AdmitInput) { in.Resident, in.AppendLen, in.InputLen = true, 100, 400 }), ModeDirect, ""},
		{"line 2: used + input == ρ·K_d is cap_ok",
			with(func(in *AdmitInput) { in.Resident, in.AppendLen, in.InputLen, in.Used = true, 10, 400, 500 }), ModeDirect, ""},
		{"line 7: append > τ_append → real-large-append",
			with(func(in *AdmitInput) { in.Resident, in.AppendLen, in.InputLen = true, 101, 400 }), ModeNone, ReasonLargeAppend},
		{"line 6 before 8: large append wins over missing capacity",
			with(func(in *AdmitInput) { in.Resident, in.AppendLen, in.InputLen, in.Used = true, 500, 600, 800 }), ModeNone, ReasonLargeAppend},
		{"line 9: resident, small append, no capacity → no-d-capacity",
			with(func(in *AdmitInput) { in.Resident, in.AppendLen, in.InputLen, in.Used = true, 10, 400, 501 }), ModeNone, ReasonNoCapacity},
		{"line 12: not resident, turn 0, capacity → Seed",
			with(func(in *AdmitInput) { in.Turn, in.AppendLen, in.InputLen = 0, 400, 400 }), ModeSeed, ""},
		{"line 12: not resident, turn > 0, capacity → Reseed (append size irrelevant)",
			with(func(in *AdmitInput) { in.Turn, in.AppendLen, in.InputLen = 7, 5000, 800 }), ModeReseed, ""},
		{"line 15: not resident, no capacity → session-not-resident-no-capacity",
			with(func(in *AdmitInput) { in.Turn, in.InputLen, in.Used = 2, 400, 501 }), ModeNone, ReasonNotResident},
		{"line 15 at turn 0 too",
			with(func(in *AdmitInput) { in.InputLen = 901 }), ModeNone, ReasonNotResident},
		{"Reserve counts against capacity",
			with(func(in *AdmitInput) { in.InputLen, in.Reserve, in.Used = 400, 1, 500 }), ModeNone, ReasonNotResident},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mode, reason := Admit(c.in)
			require.Equal(t, c.mode, mode)
			require.Equal(t, c.reason, reason)
		})
	}
}

func TestModeStrings(t *testing.T) {
	for i, want := range []string{"None", "Direct", "Seed", "Reseed", "Fallback", "Vanilla", "Fused"} {
		require.Equal(t, want, Mode(i).String())
	}
	require.Equal(t, "Mode(?)", Mode(200).String())
	for _, m := range AllModes {
		require.Equal(t, m == ModeSeed || m == ModeReseed || m == ModeFallback || m == ModeVanilla, m.UsesPrefill(), m.String())
	}
}

package policy

// Mode is how a request was executed.
type Mode uint8

// Modes. Direct/Seed/Reseed/Fallback are the KVC paper's; Vanilla is the
// plain P/D baseline (every request prefilled on P and moved to D);
// Fused is a data-parallel worker doing both phases.
const (
	ModeNone Mode = iota
	ModeDirect
	ModeSeed
	ModeReseed
	ModeFallback
	ModeVanilla
	ModeFused
)

var modeNames = [...]string{"None", "Direct", "Seed", "Reseed", "Fallback", "Vanilla", "Fused"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "Mode(?)"
}

// AllModes lists the modes that can end a request, in report order.
var AllModes = []Mode{ModeDirect, ModeSeed, ModeReseed, ModeFallback, ModeVanilla, ModeFused}

// UsesPrefill reports whether the mode runs the prompt on a prefill worker
// and moves its KV over a link.
func (m Mode) UsesPrefill() bool {
	return m == ModeSeed || m == ModeReseed || m == ModeFallback || m == ModeVanilla
}

// Rejection reasons of Algorithm 2.
const (
	ReasonLargeAppend = "real-large-append"
	ReasonNoCapacity  = "no-d-capacity"
	ReasonNotResident = "session-not-resident-no-capacity"
)

package policy

// AdmitInput is what a decode worker knows when it decides Algorithm 2.
type AdmitInput struct {
	Resident  bool // the request's session has KV resident on this worker (s ∈ M_d)
	Turn      int  // t(r)
	AppendLen int  // real append: prompt tokens not covered by the session's resident KV
	InputLen  int  // input_len(r)
	Reserve   int  // extra tokens reserved on admission (output tokens), 0 for the literal rule
	Used      int  // used_tokens: Σ resident tokens on this worker
	Budget    int  // K_d
	Rho       float64
	TauAppend int
}

// CapOK is line 2 of Algorithm 2: used + input_len (+ reserve) ≤ ρ·K_d.
func (in AdmitInput) CapOK() bool {
	return float64(in.Used+in.InputLen+in.Reserve) <= in.Rho*float64(in.Budget)
}

// Admit is Algorithm 2: the decode worker's authoritative admission
// decision. It returns the mode (ModeNone on rejection) and the reason.
func Admit(in AdmitInput) (Mode, string) {
	capOK := in.CapOK()
	if in.Resident {
		switch {
		case in.AppendLen <= in.TauAppend && capOK:
			return ModeDirect, ""
		case in.AppendLen > in.TauAppend:
			return ModeNone, ReasonLargeAppend
		default:
			return ModeNone, ReasonNoCapacity
		}
	}
	if capOK {
		if in.Turn == 0 {
			return ModeSeed, ""
		}
		return ModeReseed, ""
	}
	return ModeNone, ReasonNotResident
}

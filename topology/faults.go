package topology

import (
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// fault checks one fault block: at >= 0 and exactly one of degrade (in
// (0, 1]), cut = true, restore = true and flap = PERIOD (with flaps = N,
// default 1), which it expands into cuts and restores.
func (c *checker) fault(fh *faultHCL) ([]LinkFault, bool) {
	const usage = "A fault block takes \"at\" and exactly one of degrade = FACTOR (0 < FACTOR <= 1), cut = true, restore = true or flap = PERIOD (cut for PERIOD, restored for PERIOD, flaps times), e.g. fault { at = \"30s\"  degrade = 0.5 }."
	var f LinkFault
	ok := fh.AtRange != (hcl.Range{}) && !c.bad(fh.AtRange)
	if ok {
		f.At, ok = c.checkDurationOK(&fh.At, fh.AtRange, 0, 0, "at", "emulated time of the fault from the start of the run")
	}

	type kindAttr struct {
		kind string
		rng  hcl.Range
	}
	var set []kindAttr
	if fh.Degrade != nil || c.bad(fh.DegradeRange) {
		set = append(set, kindAttr{FaultDegrade, fh.DegradeRange})
	}
	if fh.Cut != nil || c.bad(fh.CutRange) {
		set = append(set, kindAttr{FaultCut, fh.CutRange})
	}
	if fh.Restore != nil || c.bad(fh.RestoreRange) {
		set = append(set, kindAttr{FaultRestore, fh.RestoreRange})
	}
	if fh.Flap != nil || c.bad(fh.FlapRange) {
		set = append(set, kindAttr{"flap", fh.FlapRange})
	}
	if fh.Flaps != nil && fh.Flap == nil && !c.bad(fh.FlapsRange) {
		c.errorf(fh.FlapsRange, "\"flaps\" without \"flap\"", "\"flaps\" counts the cut/restore cycles of a flap; set flap = PERIOD too. %s", usage)
		return nil, false
	}
	switch len(set) {
	case 0:
		// Unless HCL already complained about the block's content (a
		// misspelt "degrade", say).
		if !c.bad(c.bodyRange(fh.Body)) {
			c.errorf(fh.DefRange, "Empty fault block", "This fault block does nothing. %s", usage)
		}
		return nil, false
	case 1:
	default:
		// Point at the second kind in source order.
		slices.SortFunc(set, func(a, b kindAttr) int { return a.rng.Start.Byte - b.rng.Start.Byte })
		c.errorf(set[1].rng, "Conflicting fault kinds",
			"This fault block sets both %q and %q, but a fault block does one thing. Split it into two fault blocks (they may have the same \"at\"). %s",
			set[0].kind, set[1].kind, usage)
		return nil, false
	}

	k := set[0]
	f.Kind = k.kind
	switch k.kind {
	case "flap":
		if fh.Flap == nil {
			return nil, false
		}
		period, pok := c.checkDurationOK(fh.Flap, fh.FlapRange, 0, time.Nanosecond, "flap", "how long each cut (and each restore between cuts) lasts")
		n := checkNum(c, fh.Flaps, fh.FlapsRange, 1, "flaps", "number of cut/restore cycles", between(1, MaxFlaps))
		if !ok || !pok || c.bad(fh.FlapsRange) {
			return nil, false
		}
		return flapFaults(f.At, period, n), true
	case FaultDegrade:
		if fh.Degrade == nil {
			return nil, false // decoding failed; HCL said why
		}
		before := len(c.diags)
		f.Factor = checkNum(c, fh.Degrade, fh.DegradeRange, 0, "degrade",
			"factor the NIC's effective rate is multiplied by; degradations compound until a restore", unitInterval)
		ok = ok && len(c.diags) == before
	case FaultCut, FaultRestore:
		v, rng, fix := fh.Cut, fh.CutRange, "Remove the block, or use restore = true to end a cut."
		if f.Kind == FaultRestore {
			v, rng, fix = fh.Restore, fh.RestoreRange, "Remove the block."
		}
		if v == nil {
			return nil, false // decoding failed; HCL said why
		}
		if !*v {
			c.errorf(rng, fmt.Sprintf("Invalid value for %q", f.Kind), "%q must be true: a fault with %s = false does nothing. %s %s", f.Kind, f.Kind, fix, usage)
			ok = false
		}
	}
	return []LinkFault{f}, ok
}

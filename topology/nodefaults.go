package topology

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Node faults: crash and slow blocks inside prefill, decode and fused
// blocks (and crash blocks inside bucket blocks), the recovery block (how
// the routers notice a fault and retry the requests it hit) and the chaos
// block (random crash schedules from a seed). docs/MODEL.md §"Faults"
// gives the semantics.

// Node fault kinds (NodeFault.Kind), as written in HCL.
const (
	FaultCrash = "crash" // the node loses its state and stops until restart_after
	FaultSlow  = "slow"  // every forward pass takes Factor times as long for a while
)

// NodeFault is a scheduled fault of a worker (or a bucket: every instance
// of it), at emulated time At from the start of the run.
type NodeFault struct {
	Kind string        // FaultCrash or FaultSlow
	At   time.Duration // >= 0
	// For is how long the fault lasts: a crash's restart_after (0 = the
	// node never comes back), a slowdown's duration (0 = until the end).
	For time.Duration
	// Factor (slow): every forward pass takes Factor times as long (> 1).
	Factor float64
	// Chaos marks a fault drawn by the chaos block (not written by hand).
	Chaos bool
}

// End is when the fault ends (0 when it never does).
func (f NodeFault) End() time.Duration {
	if f.For == 0 {
		return 0
	}
	return f.At + f.For
}

// Recovery says how routers notice faults and what happens to the
// requests a fault hits.
type Recovery struct {
	// DetectionDelay is how long after a fault (or a restore) the routers
	// learn of it (the health-probe timeout). Default 1s.
	DetectionDelay time.Duration
	// RetryBudget is how many times a request hit by a fault is dispatched
	// again before it fails (default 2; 0 = fail at once).
	RetryBudget int
}

// Recovery defaults.
const (
	DefaultDetectionDelay = time.Second
	DefaultRetryBudget    = 2
	MaxRetryBudget        = 100
)

// DefaultRecovery returns the recovery block's defaults.
func DefaultRecovery() Recovery {
	return Recovery{DetectionDelay: DefaultDetectionDelay, RetryBudget: DefaultRetryBudget}
}

// Chaos is a random fault schedule: crashes of each kind of node with
// exponentially distributed times between failures, each followed by a
// restart after RestartAfter, drawn from Seed up to Horizon. Build writes
// the drawn faults into the workers' (and links') fault lists, marked
// Chaos, so a Spec with a chaos block runs like one with hand-written
// faults.
type Chaos struct {
	Seed         uint64
	Horizon      time.Duration // no fault starts after it
	RestartAfter time.Duration // every drawn crash (link: cut) lasts this long
	// Mean time between failures per node of each kind (0 = none).
	MTBFPrefill, MTBFDecode, MTBFFused, MTBFLink time.Duration
}

type crashHCL struct {
	DefRange          hcl.Range `hcl:",def_range"`
	At                string    `hcl:"at"`
	AtRange           hcl.Range `hcl:"at,attr_range"`
	RestartAfter      *string   `hcl:"restart_after,optional"`
	RestartAfterRange hcl.Range `hcl:"restart_after,attr_range"`
}

type slowHCL struct {
	DefRange      hcl.Range `hcl:",def_range"`
	At            string    `hcl:"at"`
	AtRange       hcl.Range `hcl:"at,attr_range"`
	Factor        float64   `hcl:"factor"`
	FactorRange   hcl.Range `hcl:"factor,attr_range"`
	Duration      *string   `hcl:"duration,optional"`
	DurationRange hcl.Range `hcl:"duration,attr_range"`
}

type recoveryHCL struct {
	DefRange            hcl.Range `hcl:",def_range"`
	DetectionDelay      *string   `hcl:"detection_delay,optional"`
	DetectionDelayRange hcl.Range `hcl:"detection_delay,attr_range"`
	RetryBudget         *int      `hcl:"retry_budget,optional"`
	RetryBudgetRange    hcl.Range `hcl:"retry_budget,attr_range"`
}

type chaosHCL struct {
	DefRange          hcl.Range `hcl:",def_range"`
	Seed              cty.Value `hcl:"seed,optional"` // a whole number (checkSeed)
	SeedRange         hcl.Range `hcl:"seed,attr_range"`
	Horizon           string    `hcl:"horizon"`
	HorizonRange      hcl.Range `hcl:"horizon,attr_range"`
	RestartAfter      *string   `hcl:"restart_after,optional"`
	RestartAfterRange hcl.Range `hcl:"restart_after,attr_range"`
	MTBFPrefill       *string   `hcl:"mtbf_prefill,optional"`
	MTBFPrefillRange  hcl.Range `hcl:"mtbf_prefill,attr_range"`
	MTBFDecode        *string   `hcl:"mtbf_decode,optional"`
	MTBFDecodeRange   hcl.Range `hcl:"mtbf_decode,attr_range"`
	MTBFFused         *string   `hcl:"mtbf_fused,optional"`
	MTBFFusedRange    hcl.Range `hcl:"mtbf_fused,attr_range"`
	MTBFLink          *string   `hcl:"mtbf_link,optional"`
	MTBFLinkRange     hcl.Range `hcl:"mtbf_link,attr_range"`
}

// nodeFaults checks a worker's crash and slow blocks; the result is in
// time order (crashes before slowdowns at the same time). Two crashes of
// one node may not overlap: a crash must start after the previous one's
// restart.
func (c *checker) nodeFaults(crashes []crashHCL, slows []slowHCL) []NodeFault {
	var out []NodeFault
	for i := range crashes {
		ch := &crashes[i]
		at, ok := c.checkDurationOK(&ch.At, ch.AtRange, 0, 0, "at", "emulated time of the crash from the start of the run")
		if ch.AtRange == (hcl.Range{}) || c.bad(ch.AtRange) {
			ok = false
		}
		ra, ok2 := c.checkDurationOK(ch.RestartAfter, ch.RestartAfterRange, 0, 0, "restart_after",
			"how long the node stays down before it restarts with fresh state; absent = never")
		if ok2 && ch.RestartAfter != nil && ra == 0 {
			// 0 is how a Spec says "never": written, it would silently
			// mean the opposite of an immediate restart.
			c.errorf(ch.RestartAfterRange, "Invalid duration for \"restart_after\"",
				"restart_after = %q would mean the node never restarts. Give a positive duration (e.g. \"1ms\" for an immediate restart), or omit restart_after for a crash that lasts to the end of the run.", *ch.RestartAfter)
			ok2 = false
		}
		if ok && ok2 {
			out = append(out, NodeFault{Kind: FaultCrash, At: at, For: ra})
		}
	}
	for i := range slows {
		sh := &slows[i]
		at, ok := c.checkDurationOK(&sh.At, sh.AtRange, 0, 0, "at", "emulated time the slowdown starts")
		if sh.AtRange == (hcl.Range{}) || c.bad(sh.AtRange) {
			ok = false
		}
		d, ok2 := c.checkDurationOK(sh.Duration, sh.DurationRange, 0, 0, "duration", "how long the slowdown lasts; absent = until the end")
		before := len(c.diags)
		f := 0.0
		if sh.FactorRange != (hcl.Range{}) && !c.bad(sh.FactorRange) {
			f = checkNum(c, &sh.Factor, sh.FactorRange, 0, "factor",
				"every forward pass takes factor times as long", func(v float64) string {
					if !(v > 1 && v <= 1000) {
						return "must be greater than 1 and at most 1000"
					}
					return ""
				})
		}
		if ok && ok2 && len(c.diags) == before && f > 1 {
			out = append(out, NodeFault{Kind: FaultSlow, At: at, For: d, Factor: f})
		}
	}
	sortNodeFaults(out)
	// Crashes may not overlap.
	var last *NodeFault
	for i := range out {
		f := &out[i]
		if f.Kind != FaultCrash {
			continue
		}
		if last != nil && (last.For == 0 || f.At < last.End()) {
			rng := hcl.Range{}
			for j := range crashes {
				if crashes[j].At != "" {
					if d, err := parseDuration(crashes[j].At); err == nil && d == f.At {
						rng = crashes[j].AtRange
					}
				}
			}
			c.errorf(rng, "Overlapping crashes",
				"This crash at %s starts while the node is still down from the crash at %s (restart_after %s). A crash block needs the node up: move it after the restart, or give the earlier crash a restart_after.",
				f.At, last.At, durOrNever(last.For))
			return nil
		}
		last = f
	}
	return out
}

func durOrNever(d time.Duration) string {
	if d == 0 {
		return "absent: never"
	}
	return d.String()
}

func sortNodeFaults(fs []NodeFault) {
	slices.SortStableFunc(fs, func(a, b NodeFault) int {
		if a.At != b.At {
			if a.At < b.At {
				return -1
			}
			return 1
		}
		if a.Kind != b.Kind {
			if a.Kind == FaultCrash {
				return -1
			}
			return 1
		}
		return 0
	})
}

// recovery checks the recovery block (at most one).
func (c *checker) recovery(rhs []recoveryHCL) Recovery {
	r := DefaultRecovery()
	rh := firstOf(c, "recovery", rhs, func(b *recoveryHCL) hcl.Range { return b.DefRange }, "")
	if rh == nil {
		return r
	}
	r.DetectionDelay = c.checkDuration(rh.DetectionDelay, rh.DetectionDelayRange, r.DetectionDelay, time.Nanosecond, "detection_delay",
		"how long after a fault or a restore the routers learn of it")
	r.RetryBudget = checkNum(c, rh.RetryBudget, rh.RetryBudgetRange, r.RetryBudget, "retry_budget",
		"dispatches of a request hit by a fault before it fails", between(0, MaxRetryBudget))
	return r
}

// chaos checks the chaos block (at most one) and draws its faults into
// spec's workers and links.
func (c *checker) chaos(spec *Spec, chs []chaosHCL) {
	ch := firstOf(c, "chaos", chs, func(b *chaosHCL) hcl.Range { return b.DefRange }, "")
	if ch == nil {
		return
	}
	var k Chaos
	k.Seed = c.checkSeed(ch.Seed, ch.SeedRange, 1, "seed of the random fault schedule")
	var ok bool
	k.Horizon, ok = c.checkDurationOK(&ch.Horizon, ch.HorizonRange, 0, time.Nanosecond, "horizon", "no drawn fault starts after it")
	if ch.HorizonRange == (hcl.Range{}) || c.bad(ch.HorizonRange) {
		ok = false
	}
	k.RestartAfter = c.checkDuration(ch.RestartAfter, ch.RestartAfterRange, 30*time.Second, time.Nanosecond, "restart_after",
		"how long every drawn crash or cut lasts")
	const help = "mean time between failures of one node of this kind; absent = none"
	k.MTBFPrefill = c.checkDuration(ch.MTBFPrefill, ch.MTBFPrefillRange, 0, time.Millisecond, "mtbf_prefill", help)
	k.MTBFDecode = c.checkDuration(ch.MTBFDecode, ch.MTBFDecodeRange, 0, time.Millisecond, "mtbf_decode", help)
	k.MTBFFused = c.checkDuration(ch.MTBFFused, ch.MTBFFusedRange, 0, time.Millisecond, "mtbf_fused", help)
	k.MTBFLink = c.checkDuration(ch.MTBFLink, ch.MTBFLinkRange, 0, time.Millisecond, "mtbf_link", help)
	if k.MTBFPrefill+k.MTBFDecode+k.MTBFFused+k.MTBFLink == 0 {
		c.errorf(ch.DefRange, "Empty chaos block",
			"This chaos block draws no fault: set at least one of mtbf_prefill, mtbf_decode, mtbf_fused and mtbf_link, e.g. chaos { horizon = \"120s\"  mtbf_decode = \"10m\" }.")
		return
	}
	if !ok {
		return
	}
	if e := chaosCount(spec, k); e > MaxChaosFaults {
		c.errorf(ch.HorizonRange, "Too many chaos faults",
			"This chaos block would draw about %.3g faults (horizon %s over MTBFs plus restart_after %s, for every node and link); at most %d are allowed. Shorten the horizon or lengthen the MTBFs.",
			e, k.Horizon, k.RestartAfter, MaxChaosFaults)
		return
	}
	spec.Chaos = &k
	if !DrawChaos(spec, k) {
		c.errorf(ch.DefRange, "Too many chaos faults",
			"This chaos block drew more than %d faults (the draw stopped there). Shorten the horizon or lengthen the MTBFs.", MaxChaosFaults)
	}
}

// MaxChaosFaults bounds the faults one chaos block may draw (crashes, and
// cut/restore pairs): a short MTBF over a long horizon would otherwise
// draw billions. The expected count is checked before drawing.
const MaxChaosFaults = 100_000

// chaosCount is the expected number of faults k draws over spec.
func chaosCount(spec *Spec, k Chaos) float64 {
	per := func(mtbf time.Duration) float64 {
		if mtbf <= 0 {
			return 0
		}
		return float64(k.Horizon) / float64(mtbf+k.RestartAfter)
	}
	return float64(len(spec.Prefill))*per(k.MTBFPrefill) + float64(len(spec.Decode))*per(k.MTBFDecode) +
		float64(len(spec.Fused))*per(k.MTBFFused) + float64(len(spec.Links))*per(k.MTBFLink)
}

// DrawChaos adds k's random crashes to spec's workers and cuts to its
// links (every fault marked Chaos), in a fixed order so that a seed always
// gives the same schedule, and reports whether it stayed within
// MaxChaosFaults (false: it stopped there). A hand-written fault is never
// altered: a drawn crash that would overlap a crash already scheduled on
// the node is skipped, and so is a drawn cut whose cut-to-restore window
// meets a hand-written cut or degradation of the link (from it to the
// hand-written restore that ends it; its restore would end theirs). Drawn
// faults never overlap each other. Linear in the faults drawn and
// written.
func DrawChaos(spec *Spec, k Chaos) bool {
	stream := uint64(0)
	n := 0
	draw := func(mtbf time.Duration, add func(at time.Duration)) {
		stream++
		if mtbf <= 0 {
			return
		}
		rng := rand.New(rand.NewPCG(k.Seed, stream*0x9e3779b97f4a7c15))
		t := time.Duration(0)
		for n <= MaxChaosFaults {
			gap := time.Duration(rng.ExpFloat64() * float64(mtbf))
			if gap > k.Horizon || t > k.Horizon-gap {
				return
			}
			t += gap
			n++
			add(t)
			t += k.RestartAfter
		}
	}
	for _, ws := range []struct {
		list []Worker
		mtbf time.Duration
	}{{spec.Prefill, k.MTBFPrefill}, {spec.Decode, k.MTBFDecode}, {spec.Fused, k.MTBFFused}} {
		for i := range ws.list {
			w := &ws.list[i]
			// The node's crashes in time order (nodeFaults sorted them):
			// seen[:next] start at or before the last drawn fault's end,
			// reach is the latest end among them (-1: none; permanent:
			// max), and last is the last drawn fault kept.
			var crashes []NodeFault
			for _, g := range w.Faults {
				if g.Kind == FaultCrash {
					crashes = append(crashes, g)
				}
			}
			next, reach := 0, time.Duration(-1)
			var last *NodeFault
			var drawn []NodeFault
			draw(ws.mtbf, func(at time.Duration) {
				f := NodeFault{Kind: FaultCrash, At: at, For: k.RestartAfter, Chaos: true}
				for next < len(crashes) && crashes[next].At <= f.End() {
					g := crashes[next]
					if g.For == 0 {
						reach = math.MaxInt64
					} else {
						reach = max(reach, g.End())
					}
					next++
				}
				if reach >= at || (last != nil && at <= last.End()) {
					return // overlaps a crash already scheduled
				}
				drawn = append(drawn, f)
				last = &drawn[len(drawn)-1]
			})
			if len(drawn) > 0 {
				w.Faults = append(w.Faults, drawn...)
				sortNodeFaults(w.Faults)
			}
		}
	}
	for i := range spec.Links {
		l := &spec.Links[i]
		busy := linkBusy(l.Faults)
		next := 0
		var drawn []LinkFault
		draw(k.MTBFLink, func(at time.Duration) {
			end := at + k.RestartAfter
			for next < len(busy) && busy[next][1] < at {
				next++
			}
			if next < len(busy) && busy[next][0] <= end {
				return // its restore would end a hand-written cut or degradation
			}
			drawn = append(drawn, LinkFault{At: at, Kind: FaultCut, Chaos: true}, LinkFault{At: end, Kind: FaultRestore, Chaos: true})
		})
		if len(drawn) > 0 {
			l.Faults = append(l.Faults, drawn...)
			slices.SortStableFunc(l.Faults, func(a, b LinkFault) int {
				if a.At < b.At {
					return -1
				} else if a.At > b.At {
					return 1
				}
				return 0
			})
		}
	}
	return n <= MaxChaosFaults
}

// linkBusy returns the windows in which a link's hand-written faults are
// in effect, in time order: from a cut or degradation to the restore that
// ends it (inclusive; math.MaxInt64 when none does).
func linkBusy(fs []LinkFault) [][2]time.Duration {
	var out [][2]time.Duration
	start := time.Duration(-1)
	fs = slices.Clone(fs)
	slices.SortStableFunc(fs, func(a, b LinkFault) int { return cmp.Compare(a.At, b.At) })
	for _, f := range fs {
		switch f.Kind {
		case FaultCut, FaultDegrade:
			if start < 0 {
				start = f.At
			}
		case FaultRestore:
			if start >= 0 {
				out = append(out, [2]time.Duration{start, f.At})
				start = -1
			}
		}
	}
	if start >= 0 {
		out = append(out, [2]time.Duration{start, math.MaxInt64})
	}
	return out
}

// flapFaults expands a flap (cut for period, restored for period, n times
// from at) into cuts and restores.
func flapFaults(at, period time.Duration, n int) []LinkFault {
	out := make([]LinkFault, 0, 2*n)
	for i := 0; i < n; i++ {
		start := at + time.Duration(2*i)*period
		out = append(out, LinkFault{At: start, Kind: FaultCut}, LinkFault{At: start + period, Kind: FaultRestore})
	}
	return out
}

// MaxFlaps bounds a flap's repetitions.
const MaxFlaps = 10000

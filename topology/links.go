package topology

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
)

func (c *checker) links(spec *Spec, lhs []linkHCL, byName map[string]declared, order []string) {
	type pair struct{ from, to string }
	seen := map[pair]*linkHCL{}
	// first[nic][attr] is the first link over the NIC with a valid attr.
	type nicAttr struct{ worker, device, attr string }
	type firstLink struct {
		lh *linkHCL
		l  Link
	}
	first := map[nicAttr]firstLink{}

	endpoint := func(name string, rng hcl.Range, role string, want Kind) bool {
		d, ok := byName[name]
		switch {
		case !ok:
			c.errorf(rng, "Unknown worker",
				"The link %s %q is not a declared worker.%s A link goes from a prefill worker to a decode worker: link \"PREFILL\" \"DECODE\" { ... }.",
				role, name, didYouMean(name, order))
			return false
		case d.kind != want:
			c.errorf(rng, "Invalid link endpoint",
				"The link %s must be a %s worker, but %q is a %s worker (declared at %s). A link goes from a prefill worker to a decode worker: link \"PREFILL\" \"DECODE\" { ... }.",
				role, want, name, d.kind, d.wh.DefRange)
			return false
		}
		return true
	}

	for i := range lhs {
		lh := &lhs[i]
		okFrom := endpoint(lh.From, lh.FromRange, "source", KindPrefill)
		okTo := endpoint(lh.To, lh.ToRange, "destination", KindDecode)
		l, valid := c.link(lh)

		if okFrom && okTo {
			k := pair{lh.From, lh.To}
			if prev, dup := seen[k]; dup {
				c.errorf(lh.DefRange, "Duplicate link",
					"A link from %q to %q was already declared at %s. Declare each (prefill, decode) pair once.", lh.From, lh.To, prev.DefRange)
				continue
			}
			seen[k] = lh
		}
		if okFrom && l.Device != "" {
			// Links over one device share one NIC: they must describe it alike.
			for _, p := range nicProps {
				if !valid[p.attr] {
					continue
				}
				k := nicAttr{lh.From, l.Device, p.attr}
				prev, ok := first[k]
				if !ok {
					first[k] = firstLink{lh, l}
					continue
				}
				if p.same(&prev.l, &l) {
					continue
				}
				subject := p.rng(lh)
				if subject == (hcl.Range{}) {
					subject = lh.DefRange
				}
				c.errorf(subject, "Inconsistent NIC "+p.what,
					"Links from %q over device %q share one NIC, but the link at %s gives it %s %s and this one %s. Give every link over one device the same %q (set it on all of them or on none), or use different devices.",
					lh.From, l.Device, prev.lh.DefRange, p.what, p.show(prev.lh, &prev.l), p.show(lh, &l), p.attr)
			}
		}
		spec.Links = append(spec.Links, l)
	}
}

// nicProp is a link attribute that describes the NIC rather than the link:
// every link over one device must agree on it.
type nicProp struct {
	attr string // HCL attribute
	what string // noun for diagnostics
	same func(a, b *Link) bool
	show func(lh *linkHCL, l *Link) string // the value as written, for diagnostics
	rng  func(lh *linkHCL) hcl.Range
}

var nicProps = []nicProp{
	{
		attr: "transport", what: "transport",
		same: func(a, b *Link) bool { return a.Transport == b.Transport },
		show: func(_ *linkHCL, l *Link) string { return fmt.Sprintf("%q", l.Transport) },
		rng:  func(lh *linkHCL) hcl.Range { return lh.TransportRange },
	},
	{
		attr: "bandwidth", what: "bandwidth",
		same: func(a, b *Link) bool { return a.Bandwidth == b.Bandwidth },
		show: func(lh *linkHCL, l *Link) string { return fmt.Sprintf("%q (%g bytes/s)", lh.Bandwidth, l.Bandwidth) },
		rng:  func(lh *linkHCL) hcl.Range { return lh.BandwidthRange },
	},
	{
		attr: "latency", what: "latency",
		same: func(a, b *Link) bool { return a.Latency == b.Latency },
		show: func(lh *linkHCL, l *Link) string {
			if lh.Latency == nil {
				return fmt.Sprintf("%s (the default)", l.Latency)
			}
			return l.Latency.String()
		},
		rng: func(lh *linkHCL) hcl.Range { return lh.LatencyRange },
	},
	{
		attr: "efficiency", what: "efficiency",
		same: func(a, b *Link) bool { return a.Efficiency == b.Efficiency },
		show: func(lh *linkHCL, l *Link) string {
			if lh.Efficiency == nil {
				return "the transport default"
			}
			return fmt.Sprintf("%g", l.Efficiency)
		},
		rng: func(lh *linkHCL) hcl.Range { return lh.EfficiencyRange },
	},
	{
		attr: "max_rate", what: "rate ceiling",
		same: func(a, b *Link) bool { return a.MaxRate == b.MaxRate },
		show: func(lh *linkHCL, l *Link) string {
			if lh.MaxRate == nil {
				return "the transport default"
			}
			return fmt.Sprintf("%q (%g bytes/s)", *lh.MaxRate, l.MaxRate)
		},
		rng: func(lh *linkHCL) hcl.Range { return lh.MaxRateRange },
	},
	{
		attr: "setup", what: "setup cost",
		same: func(a, b *Link) bool { return sameDuration(a.Setup, b.Setup) },
		show: func(_ *linkHCL, l *Link) string {
			if l.Setup == nil {
				return "the transport default"
			}
			return l.Setup.String()
		},
		rng: func(lh *linkHCL) hcl.Range { return lh.SetupRange },
	},
}

func sameDuration(a, b *time.Duration) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// link checks one link block's own attributes and faults. valid says which
// NIC properties (nicProps attrs) hold a checked value.
func (c *checker) link(lh *linkHCL) (Link, map[string]bool) {
	valid := map[string]bool{}
	l := Link{From: lh.From, To: lh.To, Device: lh.Device, Latency: DefaultLatency}
	switch lh.Transport {
	case string(TransportRDMA), string(TransportTCP):
		l.Transport = Transport(lh.Transport)
		valid["transport"] = true
	default:
		if lh.TransportRange != (hcl.Range{}) {
			allowed := []string{string(TransportRDMA), string(TransportTCP)}
			c.errorf(lh.TransportRange, "Invalid transport",
				"\"transport\" must be %s; got %q.%s", quotedOr(allowed), lh.Transport, didYouMean(lh.Transport, allowed))
		}
	}
	if lh.DeviceRange != (hcl.Range{}) && lh.Device == "" {
		c.errorf(lh.DeviceRange, "Empty NIC device",
			"\"device\" names the NIC on the prefill side, e.g. \"mlx5_0\"; links naming the same device on the same prefill worker share its bandwidth.")
	}
	if lh.BandwidthRange != (hcl.Range{}) && !c.bad(lh.BandwidthRange) {
		bw, err := ParseBandwidth(lh.Bandwidth)
		if err != nil {
			c.errorf(lh.BandwidthRange, "Invalid bandwidth", "%s.", err)
		} else {
			l.Bandwidth = bw
			valid["bandwidth"] = true
		}
	}
	l.Latency, valid["latency"] = c.checkDurationOK(lh.Latency, lh.LatencyRange, DefaultLatency, 0, "latency", "one-way link latency")

	if lh.Efficiency != nil {
		if e := c.optFraction(lh.Efficiency, lh.EfficiencyRange, "efficiency",
			"fraction of the line rate the transport achieves; absent = the transport default"); e != nil {
			l.Efficiency = *e
			valid["efficiency"] = true
		}
	} else {
		valid["efficiency"] = !c.bad(lh.EfficiencyRange)
	}
	if lh.MaxRate != nil {
		l.MaxRate, valid["max_rate"] = c.checkBandwidth(lh.MaxRate, lh.MaxRateRange, l.MaxRate,
			"max_rate", "the NIC's rate ceiling whatever the line rate; absent = the transport default")
	} else {
		valid["max_rate"] = !c.bad(lh.MaxRateRange)
	}
	if lh.Setup != nil {
		l.Setup = c.optDuration(lh.Setup, lh.SetupRange, "setup", "per-transfer setup cost; absent = the transport default")
		valid["setup"] = l.Setup != nil
	} else {
		valid["setup"] = !c.bad(lh.SetupRange)
	}

	for i := range lh.Faults {
		if fs, ok := c.fault(&lh.Faults[i]); ok {
			l.Faults = append(l.Faults, fs...)
		}
	}
	c.degradeFloor(&l, lh)
	return l, valid
}

// degradeFloor refuses degradations that take the link below
// MinBandwidth (a degrade = 1e-9 made a 200 Gb/s link 200 b/s, the
// bandwidth bound bypassed: a run of many emulated years). Degradations
// compound until a restore, in time order.
func (c *checker) degradeFloor(l *Link, lh *linkHCL) {
	if l.Bandwidth <= 0 {
		return
	}
	fs := slices.Clone(l.Faults)
	slices.SortStableFunc(fs, func(a, b LinkFault) int { return cmp.Compare(a.At, b.At) })
	f := 1.0
	for _, x := range fs {
		switch x.Kind {
		case FaultDegrade:
			f *= x.Factor
			if l.Bandwidth*f < MinBandwidth {
				rng := lh.DefRange
				for i := range lh.Faults {
					if d := lh.Faults[i].Degrade; d != nil && *d == x.Factor {
						rng = lh.Faults[i].DegradeRange
					}
				}
				c.errorf(rng, "Degraded below the bandwidth floor",
					"With the degradations up to %s the link's bandwidth is %.3g b/s, below the %g b/s floor of any bandwidth (docs/MODEL.md §6). Use a larger factor, or cut = true for a dead link.",
					x.At, 8*l.Bandwidth*f, 8*MinBandwidth)
				return
			}
		case FaultRestore:
			f = 1
		}
	}
}

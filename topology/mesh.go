package topology

import (
	"strconv"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// A mesh block links every (prefill, decode) pair that has no link block
// of its own, with the attributes of a link block:
//
//	mesh {
//	  transport = "rdma"
//	  device    = "mlx5_${link.decode_index}" # a NIC per decode worker on each prefill worker
//	  bandwidth = "200Gbps"
//	}
//
// device is evaluated per pair with link.prefill, link.decode (names),
// link.prefill_index and link.decode_index (0-based, in file order) in
// scope; the other attributes once. It replaces a dynamic "link" block
// over setproduct (which enumerates the pairs in HCL and is capped at
// 65,536): a mesh of 256 × 768 workers builds its 196,608 links in Go,
// evaluating device once per distinct value of what it names. Links are
// generated in prefill-major order after the link blocks, exactly the
// order the dynamic block gave.
type meshHCL struct {
	DefRange hcl.Range `hcl:",def_range"`

	Transport      string         `hcl:"transport"`
	TransportRange hcl.Range      `hcl:"transport,attr_range"`
	Device         hcl.Expression `hcl:"device"`
	DeviceRange    hcl.Range      `hcl:"device,attr_range"`
	Bandwidth      string         `hcl:"bandwidth"`
	BandwidthRange hcl.Range      `hcl:"bandwidth,attr_range"`
	Latency        *string        `hcl:"latency,optional"`
	LatencyRange   hcl.Range      `hcl:"latency,attr_range"`

	Efficiency      *float64  `hcl:"efficiency,optional"`
	EfficiencyRange hcl.Range `hcl:"efficiency,attr_range"`
	MaxRate         *string   `hcl:"max_rate,optional"`
	MaxRateRange    hcl.Range `hcl:"max_rate,attr_range"`
	Setup           *string   `hcl:"setup,optional"`
	SetupRange      hcl.Range `hcl:"setup,attr_range"`
}

// meshVars are the attributes of link in a mesh's device expression.
var meshVars = []string{"prefill", "decode", "prefill_index", "decode_index"}

// mesh adds the links of the mesh block (at most one) for the pairs the
// link blocks left out.
func (c *checker) mesh(spec *Spec, ms []meshHCL, ctx *hcl.EvalContext) {
	m := firstOf(c, "mesh", ms, func(b *meshHCL) hcl.Range { return b.DefRange }, " Give pairs that differ a link block of their own.")
	if m == nil {
		return
	}
	// The attributes but device, checked once as a link block's.
	tmpl := linkHCL{
		DefRange: m.DefRange, Transport: m.Transport, TransportRange: m.TransportRange,
		Device: "mesh", Bandwidth: m.Bandwidth, BandwidthRange: m.BandwidthRange,
		Latency: m.Latency, LatencyRange: m.LatencyRange, Efficiency: m.Efficiency, EfficiencyRange: m.EfficiencyRange,
		MaxRate: m.MaxRate, MaxRateRange: m.MaxRateRange, Setup: m.Setup, SetupRange: m.SetupRange,
	}
	before := len(c.diags)
	l0, _ := c.link(&tmpl)
	if len(c.diags) > before && c.diags[before:].HasErrors() {
		return
	}
	// What device depends on.
	usesP, usesD, ok := false, false, true
	for _, tr := range m.Device.Variables() {
		if tr.RootName() != "link" {
			continue // var.*: already in ctx
		}
		attr := ""
		if len(tr) > 1 {
			if a, isAttr := tr[1].(hcl.TraverseAttr); isAttr {
				attr = a.Name
			}
		}
		switch attr {
		case "prefill", "prefill_index":
			usesP = true
		case "decode", "decode_index":
			usesD = true
		default:
			rng := tr.SourceRange()
			c.errorf(rng, "Unknown mesh variable",
				"In a mesh block's device, link has the attributes %s; got %q.%s",
				quotedOr(meshVars), tr.RootName()+traversalTail(tr), didYouMean(attr, meshVars))
			ok = false
		}
	}
	if !ok {
		return
	}
	explicit := make(map[[2]string]bool, len(spec.Links))
	byNIC := map[[2]string]int{} // (prefill, device) of a link block → its index
	for i, l := range spec.Links {
		explicit[[2]string{l.From, l.To}] = true
		if _, seen := byNIC[[2]string{l.From, l.Device}]; !seen {
			byNIC[[2]string{l.From, l.Device}] = i
		}
	}
	type key struct{ p, d int }
	devices := map[key]string{}
	device := func(pi, di int) (string, bool) {
		k := key{-1, -1}
		if usesP {
			k.p = pi
		}
		if usesD {
			k.d = di
		}
		if d, ok := devices[k]; ok {
			return d, true
		}
		child := ctx.NewChild()
		child.Variables = map[string]cty.Value{"link": cty.ObjectVal(map[string]cty.Value{
			"prefill": cty.StringVal(spec.Prefill[pi].Name), "decode": cty.StringVal(spec.Decode[di].Name),
			"prefill_index": cty.NumberIntVal(int64(pi)), "decode_index": cty.NumberIntVal(int64(di)),
		})}
		v, diags := m.Device.Value(child)
		if diags.HasErrors() {
			c.diags = append(c.diags, diags...)
			return "", false
		}
		if v.IsNull() || !v.IsKnown() || (v.Type() != cty.String && v.Type() != cty.Number) {
			c.errorf(m.DeviceRange, "Invalid NIC device", "\"device\" must be a string, e.g. \"mlx5_${link.decode_index}\"; got %s.", v.Type().FriendlyName())
			return "", false
		}
		s := v.AsString()
		if v.Type() == cty.Number {
			s = v.AsBigFloat().Text('f', -1)
		}
		if s == "" {
			c.errorf(m.DeviceRange, "Empty NIC device",
				"\"device\" names the NIC on the prefill side, e.g. \"mlx5_${link.decode_index}\"; links naming the same device on the same prefill worker share its bandwidth.")
			return "", false
		}
		devices[k] = s
		return s, true
	}
	spec.Links = append(make([]Link, 0, len(spec.Links)+len(spec.Prefill)*len(spec.Decode)), spec.Links...)
	for pi, p := range spec.Prefill {
		for di, d := range spec.Decode {
			if explicit[[2]string{p.Name, d.Name}] {
				continue
			}
			dev, ok := device(pi, di)
			if !ok {
				return
			}
			l := l0
			l.From, l.To, l.Device = p.Name, d.Name, dev
			if i, shared := byNIC[[2]string{p.Name, dev}]; shared {
				// A link block and the mesh over one NIC must describe it alike.
				e := &spec.Links[i]
				for _, np := range nicProps {
					if !np.same(e, &l) {
						c.errorf(m.DefRange, "Inconsistent NIC "+np.what,
							"The mesh's link from %q to %q uses device %q of %q, which link %q %q also uses, with another %s. Give the link block the mesh's %q, or another device.",
							p.Name, d.Name, dev, p.Name, e.From, e.To, np.what, np.attr)
						return
					}
				}
			}
			spec.Links = append(spec.Links, l)
		}
	}
}

// traversalTail renders a traversal after its root (".x", "[0]").
func traversalTail(tr hcl.Traversal) string {
	s := ""
	for _, step := range tr[1:] {
		switch t := step.(type) {
		case hcl.TraverseAttr:
			s += "." + t.Name
		case hcl.TraverseIndex:
			if t.Key.Type() == cty.Number {
				s += "[" + t.Key.AsBigFloat().Text('f', -1) + "]"
			} else if t.Key.Type() == cty.String {
				s += "[" + strconv.Quote(t.Key.AsString()) + "]"
			}
		}
	}
	return s
}

package topology

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// NIC is one network device of a prefill worker as its links describe it.
// Every link from the prefill worker that names the device shares it: its
// bandwidth, its transport parameters and its faults.
type NIC struct {
	Prefill string // the prefill worker
	Device  string // e.g. "mlx5_0"

	// The NIC properties, on which every link over the device agrees (see
	// Link for their meaning).
	Transport  Transport
	Bandwidth  float64
	Latency    time.Duration
	Efficiency float64
	MaxRate    float64
	Setup      *time.Duration

	// Faults is the union of the faults of the links over the device,
	// ordered by At; faults at the same time keep link order, then file
	// order. A fault declared on several of the links (same At, Kind and
	// Factor) is applied once, or as many times as the link that declares
	// it most often.
	Faults []LinkFault

	// Links are the indexes in Spec.Links of the links over the device, in
	// file order.
	Links []int
}

// NICs groups the links by (prefill worker, device), in order of first
// appearance. It fails when links over one device disagree on a NIC
// property (transport, bandwidth, latency, efficiency, max_rate or setup);
// Parse reports that as a diagnostic, so it never happens for a parsed
// Spec.
func (s *Spec) NICs() ([]NIC, error) {
	type key struct{ prefill, device string }
	idx := map[key]int{}
	var nics []NIC
	// counts[n][f] is the largest number of times one link over NIC n
	// declares fault f.
	var counts []map[LinkFault]int
	for i := range s.Links {
		l := &s.Links[i]
		k := key{l.From, l.Device}
		n, ok := idx[k]
		if !ok {
			n = len(nics)
			idx[k] = n
			nics = append(nics, NIC{
				Prefill: l.From, Device: l.Device, Transport: l.Transport, Bandwidth: l.Bandwidth,
				Latency: l.Latency, Efficiency: l.Efficiency, MaxRate: l.MaxRate, Setup: l.Setup,
			})
			counts = append(counts, nil) // made by the first link with faults
		} else {
			firstLink := &s.Links[nics[n].Links[0]]
			for _, p := range nicProps {
				if !p.same(firstLink, l) {
					return nil, fmt.Errorf("topology: links %s -> %s and %s -> %s share NIC %s/%s but give it different %s",
						firstLink.From, firstLink.To, l.From, l.To, l.From, l.Device, p.what)
				}
			}
		}
		nics[n].Links = append(nics[n].Links, i)
		if len(l.Faults) == 0 {
			continue
		}
		if counts[n] == nil {
			counts[n] = map[LinkFault]int{}
		}
		mine := map[LinkFault]int{}
		for _, f := range l.Faults {
			mine[f]++
			if mine[f] > counts[n][f] {
				counts[n][f] = mine[f]
				nics[n].Faults = append(nics[n].Faults, f)
			}
		}
	}
	for i := range nics {
		slices.SortStableFunc(nics[i].Faults, func(a, b LinkFault) int { return cmp.Compare(a.At, b.At) })
	}
	return nics, nil
}

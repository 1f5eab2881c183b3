package topology

import "fmt"

// Group returns group i of n of a disaggregated scenario: the i-th of n
// contiguous, near-equal slices of its prefill workers and of its decode
// workers (prefill[i·P/n, (i+1)·P/n), likewise for decode), the links
// among them (with their faults), and its router with ε scaled to the
// group (ε = |D| stays |D| of the group; a smaller ε is kept, at most the
// group's |D|). Groups share nothing: no message crosses them, so N
// 'pdemu serve --group I/N' processes behind a session-affine gateway
// are one cluster split into N routing domains. The workers keep their
// names (p0, d0, ... of the whole scenario).
//
// Bucket-routed and fused scenarios, and a group that would have no
// prefill or no decode worker, are errors.
func (s *Spec) Group(i, n int) (*Spec, error) {
	switch {
	case n < 1 || i < 0 || i >= n:
		return nil, fmt.Errorf("--group %d/%d: want 0 <= I < N", i, n)
	case len(s.Buckets) > 0 || len(s.Fused) > 0:
		return nil, fmt.Errorf("--group: %s routes over fused workers; groups split a disaggregated (prefill/decode) cluster", s.Source)
	case len(s.Prefill) < n || len(s.Decode) < n:
		return nil, fmt.Errorf("--group %d/%d: %s has %d prefill and %d decode workers; each of %d groups needs at least one of each",
			i, n, s.Source, len(s.Prefill), len(s.Decode), n)
	}
	g := *s
	slice := func(ws []Worker) []Worker {
		lo, hi := i*len(ws)/n, (i+1)*len(ws)/n
		return append([]Worker(nil), ws[lo:hi]...)
	}
	g.Prefill, g.Decode = slice(s.Prefill), slice(s.Decode)
	in := map[string]bool{}
	for _, w := range g.Prefill {
		in[w.Name] = true
	}
	for _, w := range g.Decode {
		in[w.Name] = true
	}
	g.Links = nil
	for _, l := range s.Links {
		if in[l.From] && in[l.To] {
			g.Links = append(g.Links, l)
		}
	}
	if s.Router.Epsilon >= len(s.Decode) || s.Router.Epsilon > len(g.Decode) {
		g.Router.Epsilon = len(g.Decode)
	}
	if g.Name != "" {
		g.Name = fmt.Sprintf("%s-group%d-of-%d", s.Name, i, n)
	}
	return &g, nil
}

package cluster

// health is a node's view of which nodes and links are down: the fault
// that took each down (+1; 0 = up). Pure bookkeeping.
type health struct {
	p, d []int32
	link [][]int32 // [prefill][decode]
}

func newHealth(np, nd int) *health {
	h := &health{p: make([]int32, np), d: make([]int32, nd), link: make([][]int32, np)}
	for i := range h.link {
		h.link[i] = make([]int32, nd)
	}
	return h
}

func (h *health) apply(m Health) {
	v := int32(m.Fault + 1)
	if m.Up {
		v = 0
	}
	switch m.Target {
	case KindDecode:
		h.d[m.Index] = v
	case KindPrefill:
		h.p[m.Index] = v
	case KindLink:
		for _, d := range m.Ds {
			h.link[m.Index][d] = v
		}
	}
}

// downFaultOf is the current state of m's target (for a link: of its
// first decode index).
func (h *health) downFaultOf(m Health) int32 {
	switch m.Target {
	case KindDecode:
		return h.d[m.Index]
	case KindPrefill:
		return h.p[m.Index]
	case KindLink:
		if len(m.Ds) > 0 {
			return h.link[m.Index][m.Ds[0]]
		}
	}
	return 0
}

// pathOK: prefill p can serve decode d (both up, the link alive).
func (h *health) pathOK(p, d int) bool { return h.p[p] == 0 && h.d[d] == 0 && h.link[p][d] == 0 }

// prefillFor returns p itself if it can serve d, else the lowest prefill
// index that can, else -1.
func (h *health) prefillFor(p, d int) int {
	if p >= 0 && p < len(h.p) && h.pathOK(p, d) {
		return p
	}
	for q := range h.p {
		if h.pathOK(q, d) {
			return q
		}
	}
	return -1
}

// reachable: d is up and some prefill worker can reach it.
func (h *health) reachable(d int) bool { return h.d[d] == 0 && h.prefillFor(-1, d) >= 0 }

// nextReachable returns d if reachable, else the next reachable decode
// index after it (cyclically), else -1.
func (h *health) nextReachable(d int) int {
	for i := range h.d {
		if c := (d + i) % len(h.d); h.reachable(c) {
			return c
		}
	}
	return -1
}

// downFault is the fault id (+1) that makes the path p→d unusable.
func (h *health) downFault(p, d int) int32 {
	if p >= 0 && h.p[p] != 0 {
		return h.p[p]
	}
	if h.d[d] != 0 {
		return h.d[d]
	}
	if p >= 0 {
		return h.link[p][d]
	}
	return 0
}

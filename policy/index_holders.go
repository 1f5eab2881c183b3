package policy

import "github.com/pdemu/pdemu/internal/freelist"

// holder is one worker's count of lists through a segment.
type holder struct{ d, n int32 }

// holds reports whether segment s has d among its holders.
func (x *ResidentIndex) holds(s *iseg, d int32) bool {
	if s.hd >= 0 {
		return s.hd == d
	}
	for _, h := range x.hsets[^s.hd] {
		if h.d == d {
			return true
		}
	}
	return false
}

// addHolder adds a list of d through segment id and returns d's count.
func (x *ResidentIndex) addHolder(id int32, d int32) int32 {
	s := &x.segs[id]
	if s.hd >= 0 {
		if s.hd == d {
			s.hn++
			return s.hn
		}
		h := x.newHset()
		x.hsets[h] = append(x.hsets[h], holder{s.hd, s.hn}, holder{d, 1})
		s.hd = ^h
		return 1
	}
	l := x.hsets[^s.hd]
	for i := range l {
		if l[i].d == d {
			l[i].n++
			return l[i].n
		}
	}
	x.hsets[^s.hd] = append(l, holder{d, 1})
	return 1
}

// removeHolder removes a list of d through segment id and returns d's
// count. A segment whose only holder's count reaches 0 is dead (occ == 0).
func (x *ResidentIndex) removeHolder(id int32, d int32) int32 {
	s := &x.segs[id]
	if s.hd >= 0 {
		s.hn--
		return s.hn
	}
	h := ^s.hd
	l := x.hsets[h]
	i := 0
	for l[i].d != d {
		i++
	}
	l[i].n--
	n := l[i].n
	if n > 0 {
		return n
	}
	copy(l[i:], l[i+1:])
	l = l[:len(l)-1]
	x.hsets[h] = l
	if len(l) == 1 {
		s.hd, s.hn = l[0].d, l[0].n
		x.hsets[h] = l[:0]
		x.hfree = append(x.hfree, h)
	}
	return 0
}

func (x *ResidentIndex) newHset() int32 {
	if h, ok := freelist.Pop(&x.hfree); ok {
		return h
	}
	// New sets start with room for 4 holders, carved from a chunk of
	// hsetChunk such rooms (the 3-index slice keeps a set that grows past
	// 4 from writing into its neighbour: append copies it out).
	if len(x.hslab) < 4 {
		x.hslab = make([]holder, 4*hsetChunk)
	}
	x.hsets = append(x.hsets, x.hslab[:0:4])
	x.hslab = x.hslab[4:]
	return int32(len(x.hsets) - 1)
}

// hsetChunk is how many new holder sets one allocation makes room for.
const hsetChunk = 64

// copyHolders gives segment to the holders of segment from (a copy).
func (x *ResidentIndex) copyHolders(to, from int32) {
	f := x.segs[from]
	if f.hd >= 0 {
		x.segs[to].hd, x.segs[to].hn = f.hd, f.hn
		return
	}
	h := x.newHset()
	x.hsets[h] = append(x.hsets[h], x.hsets[^f.hd]...)
	x.segs[to].hd = ^h
}

package metrics

import "strconv"

// JoinReasons is the reason column's list of rejections: each distinct
// reason once, in the order first seen, followed by "(xN)" when it
// occurred N > 1 times, ';'-separated. A request rejected by 192 decode
// workers for the same reason used to repeat it 192 times (6.5 KB rows).
func JoinReasons(lists ...[]string) string { return CompactReasons(";", lists...) }

// CompactReasons is JoinReasons with sep between the entries (kv_cause's
// "rejected:" list uses '+'). It allocates only the result ("" when
// there are no reasons).
func CompactReasons(sep string, lists ...[]string) string {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	if n == 0 {
		return ""
	}
	var buf [256]byte // on the stack: the string is the one allocation
	return string(AppendCompactReasons(buf[:0], sep, lists...))
}

// distinctOnStack is how many distinct reasons AppendCompactReasons counts
// in stack arrays, by linear search; past it, a map counts the rest.
const distinctOnStack = 16

// AppendCompactReasons appends CompactReasons(sep, lists...) to b. A list
// has few distinct reasons (one per rejecting worker's kind of refusal):
// they are counted by linear search in stack arrays, in the order first
// seen, with a map only past distinctOnStack of them.
func AppendCompactReasons(b []byte, sep string, lists ...[]string) []byte {
	var orderArr [distinctOnStack]string
	var countArr [distinctOnStack]int
	order, count := orderArr[:0], countArr[:0]
	var more map[string]int // index into order, once order outgrew the arrays
	for _, l := range lists {
		for _, r := range l {
			i := -1
			if more != nil {
				if j, ok := more[r]; ok {
					i = j
				}
			} else {
				for j := range order {
					if order[j] == r {
						i = j
						break
					}
				}
			}
			if i >= 0 {
				count[i]++
				continue
			}
			if more == nil && len(order) == distinctOnStack {
				more = make(map[string]int, 2*distinctOnStack)
				for j, o := range order {
					more[o] = j
				}
			}
			if more != nil {
				more[r] = len(order)
			}
			order, count = append(order, r), append(count, 1)
		}
	}
	for i, r := range order {
		if i > 0 {
			b = append(b, sep...)
		}
		b = append(b, r...)
		if n := count[i]; n > 1 {
			b = append(b, "(x"...)
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, ')')
		}
	}
	return b
}

// Interner returns one string per distinct value for values that repeat
// (reason lists, rejected-cause lists: a run has few distinct ones, each
// seen by many requests), so each costs one allocation per run rather
// than one per request. It keeps at most internMax values; past that,
// new ones are returned as fresh strings. Not safe for concurrent use.
type Interner struct{ m map[string]string }

// internMax bounds an Interner's values (a run's distinct reason lists
// are far fewer; a pathological run allocates past it, as before).
const internMax = 4096

// Bytes returns b as a string: the interned one when b was seen (no
// allocation), else a new one, kept while the Interner has room.
func (in *Interner) Bytes(b []byte) string {
	if s, ok := in.m[string(b)]; ok { // the conversion does not allocate
		return s
	}
	s := string(b)
	if in.m == nil {
		in.m = map[string]string{}
	}
	if len(in.m) < internMax {
		in.m[s] = s
	}
	return s
}

// Reasons is JoinReasons(lists...) interned.
func (in *Interner) Reasons(lists ...[]string) string {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	if n == 0 {
		return ""
	}
	var buf [256]byte
	return in.Bytes(AppendCompactReasons(buf[:0], ";", lists...))
}

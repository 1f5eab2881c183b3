package metrics

import (
	"strconv"
	"strings"
)

// JoinReasons is the reason column's list of rejections: each distinct
// reason once, in the order first seen, followed by "(xN)" when it
// occurred N > 1 times, ';'-separated. A request rejected by 192 decode
// workers for the same reason used to repeat it 192 times (6.5 KB rows).
func JoinReasons(lists ...[]string) string { return CompactReasons(";", lists...) }

// CompactReasons is JoinReasons with sep between the entries (kv_cause's
// "rejected:" list uses '+').
func CompactReasons(sep string, lists ...[]string) string {
	var order []string
	count := map[string]int{}
	for _, l := range lists {
		for _, r := range l {
			if count[r] == 0 {
				order = append(order, r)
			}
			count[r]++
		}
	}
	var b strings.Builder
	for i, r := range order {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(r)
		if n := count[r]; n > 1 {
			b.WriteString("(x")
			b.WriteString(strconv.Itoa(n))
			b.WriteByte(')')
		}
	}
	return b.String()
}

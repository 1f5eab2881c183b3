package topology

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pdemu/pdemu/internal/suggest"
)

// didYouMean renders ` Did you mean "x"?` for the closest candidate, or ""
// when there is none (the one rule: internal/suggest).
var didYouMean = suggest.DidYouMean

// quotedList renders names as `"a", "b" and "c"` in sorted order.
func quotedList(names []string) string { return quotedJoin(names, "and") }

// quotedOr renders names as `"a", "b" or "c"` in sorted order.
func quotedOr(names []string) string { return quotedJoin(names, "or") }

func quotedJoin(names []string, conj string) string {
	s := append([]string(nil), names...)
	sort.Strings(s)
	q := make([]string, len(s))
	for i, n := range s {
		q[i] = fmt.Sprintf("%q", n)
	}
	switch len(q) {
	case 0:
		return "(none)"
	case 1:
		return q[0]
	default:
		return strings.Join(q[:len(q)-1], ", ") + " " + conj + " " + q[len(q)-1]
	}
}

package topology

import (
	"fmt"
	"sort"
	"strings"
)

// suggest returns the candidate closest to name, or "" when none is close
// enough to be a plausible typo. The comparison is case-insensitive and
// follows HCL's own rule of thumb: an edit distance below 3.
func suggest(name string, candidates []string) string {
	best, bestDist := "", 3
	lname := strings.ToLower(name)
	for _, c := range candidates {
		d := editDistance(lname, strings.ToLower(c), bestDist)
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// didYouMean renders ` Did you mean "x"?` for the closest candidate, or ""
// when there is none.
func didYouMean(name string, candidates []string) string {
	if s := suggest(name, candidates); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}

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

// editDistance is the Levenshtein distance between a and b (by rune). It
// gives up early and returns limit once the distance is known to be at least
// limit, so long hostile inputs stay cheap.
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], limit)
}

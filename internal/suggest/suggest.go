// Package suggest is pdemu's one "Did you mean …?": the edit distance and
// the choice of the candidate a misspelt name most plausibly meant, used
// by the HCL diagnostics (topology), the GPU and model catalog (gpu) and
// the CLI's commands, flags and scenarios (cmd/pdemu).
//
// Contract: names are compared case-insensitively, by rune; Nearest
// returns the first candidate at the least distance from the name, and
// only when that distance is within the candidate's allowance (MaxEdits),
// else "". Distances are computed with an early exit, so long hostile
// inputs stay cheap.
package suggest

import (
	"fmt"
	"strings"
)

// MaxEdits is how many edits a candidate allows a typo to be.
type MaxEdits func(candidate string) int

// Typo allows 2 edits whatever the name (HCL's own rule of thumb: an edit
// distance below 3).
func Typo(string) int { return 2 }

// Third allows a third of the candidate's length, at least 2 edits (long
// catalog names such as Qwen3-235B-A22B).
func Third(candidate string) int { return max(2, len(candidate)/3) }

// Nearest returns the candidate nearest to name (see the package
// contract), or "" when none is a plausible typo under allow.
func Nearest(name string, candidates []string, allow MaxEdits) string {
	limit := 0 // one past the largest allowance: a distance at or past it cannot be a typo
	for _, c := range candidates {
		limit = max(limit, allow(c)+1)
	}
	lname := strings.ToLower(name)
	best, bestD := "", limit
	for _, c := range candidates {
		if d := Distance(lname, strings.ToLower(c), bestD); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > allow(best) {
		return ""
	}
	return best
}

// NearestOrPrefix is Nearest with Typo, falling back to the first
// candidate that name (3 characters or more) starts (abbreviated command
// and scenario names).
func NearestOrPrefix(name string, candidates []string) string {
	if s := Nearest(name, candidates, Typo); s != "" {
		return s
	}
	if len(name) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(c, name) {
				return c
			}
		}
	}
	return ""
}

// DidYouMean renders ` Did you mean "x"?` for Nearest(name, candidates,
// Typo), or "" when there is none.
func DidYouMean(name string, candidates []string) string {
	if s := Nearest(name, candidates, Typo); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}

// Distance is the Levenshtein distance between a and b (by rune). It gives
// up early and returns limit once the distance is known to be at least
// limit (limit <= 0: no limit).
func Distance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if limit <= 0 {
		limit = len(ra) + len(rb) + 1
	}
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

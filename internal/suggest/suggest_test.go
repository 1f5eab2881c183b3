package suggest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

// full is the textbook Levenshtein distance by rune, no limit: the
// reference for Distance.
func full(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			c := 1
			if ra[i-1] == rb[j-1] {
				c = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+c)
		}
	}
	return d[len(ra)][len(rb)]
}

func TestDistance(t *testing.T) {
	assert.Equal(t, 0, Distance("", "", 0))
	assert.Equal(t, 3, Distance("", "abc", 0))
	assert.Equal(t, 3, Distance("kitten", "sitting", 10))
	assert.Equal(t, 1, Distance("qwen3-8", "qwen3-8b", 0))
	assert.Equal(t, 2, Distance("aaaaaaaa", "bbbbbbbb", 2), "stops at the limit")
	assert.Equal(t, 1, Distance("é", "e", 0), "by rune")
	rapid.Check(t, func(t *rapid.T) {
		alpha := rapid.StringOf(rapid.SampledFrom([]rune("abcé-")))
		a, b := alpha.Draw(t, "a"), alpha.Draw(t, "b")
		limit := rapid.IntRange(0, 8).Draw(t, "limit")
		want := full(a, b)
		if limit > 0 {
			want = min(want, limit)
		}
		assert.Equal(t, want, Distance(a, b, limit))
	})
}

// TestNearest pins the three rules the three former copies had.
func TestNearest(t *testing.T) {
	gpus := []string{"H100-SXM", "H200-SXM", "B200"}
	assert.Equal(t, "H200-SXM", Nearest("h200-sxm", gpus, Typo), "case-insensitive")
	assert.Equal(t, "H200-SXM", Nearest("H200-SMX", gpus, Typo))
	assert.Equal(t, "", Nearest("B300X", []string{"H100-SXM"}, Typo))
	assert.Equal(t, "", Nearest("anything", nil, Typo))
	assert.Equal(t, "H100-SXM", Nearest("H100-SXMX", gpus, Typo), "the first at the least distance")
	assert.Equal(t, ` Did you mean "kvc"?`, DidYouMean("kcv", []string{"kvc", "vanilla"}))
	assert.Equal(t, "", DidYouMean("zzzzzz", []string{"kvc", "vanilla"}))
	// Third: a long name allows more edits; a short one still 2.
	assert.Equal(t, "Qwen3-235B-A22B", Nearest("qwen3-235b-a", []string{"Qwen3-8B", "Qwen3-235B-A22B"}, Third))
	assert.Equal(t, "", Nearest("qwen3-235b-a", []string{"Qwen3-8B", "Qwen3-235B-A22B"}, Typo))
	// The overall nearest decides: a farther candidate with a larger
	// allowance does not win over a nearer one that allows too little.
	assert.Equal(t, "", Nearest("abc", []string{"ab", "abcdefghijkl"}, func(c string) int { return map[string]int{"ab": 0, "abcdefghijkl": 20}[c] }))
	assert.Equal(t, "run", NearestOrPrefix("rnu", []string{"run", "report"}))
	assert.Equal(t, "scenarios", NearestOrPrefix("scen", []string{"run", "scenarios"}), "a prefix")
	assert.Equal(t, "", NearestOrPrefix("sc", []string{"run", "scenarios"}), "too short for a prefix")
	long := strings.Repeat("x", 1<<16)
	assert.Equal(t, "", Nearest(long, []string{"kvc"}, Typo), "long hostile input")
}

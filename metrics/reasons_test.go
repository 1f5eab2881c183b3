package metrics

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

func TestJoinReasons(t *testing.T) {
	assert.Equal(t, "", JoinReasons(nil))
	assert.Equal(t, "a", JoinReasons([]string{"a"}))
	assert.Equal(t, "fault: d1 down;capacity(x3);tau_append", JoinReasons([]string{"fault: d1 down"}, []string{"capacity", "capacity", "tau_append", "capacity"}))
	many := make([]string, 192)
	for i := range many {
		many[i] = "session-not-resident-no-capacity"
	}
	assert.Equal(t, "session-not-resident-no-capacity(x192)", JoinReasons(many), "one entry, not 192")
}

// refCompactReasons is the map-based CompactReasons the append-style one
// replaced, kept as the reference.
func refCompactReasons(sep string, lists ...[]string) string {
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
	s := ""
	for i, r := range order {
		if i > 0 {
			s += sep
		}
		s += r
		if n := count[r]; n > 1 {
			s += "(x" + strconv.Itoa(n) + ")"
		}
	}
	return s
}

// TestCompactReasonsMatchesReference: random lists over alphabets small
// and larger than the stack arrays (the map path) give the reference's
// string, and AppendCompactReasons appends exactly it.
func TestCompactReasonsMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.IntRange(1, 3*distinctOnStack).Draw(t, "alphabet")
		lists := rapid.SliceOfN(rapid.SliceOf(rapid.IntRange(0, alphabet-1)), 0, 3).Draw(t, "lists")
		var ls [][]string
		for _, l := range lists {
			var s []string
			for _, v := range l {
				s = append(s, "r"+strconv.Itoa(v))
			}
			ls = append(ls, s)
		}
		sep := rapid.SampledFrom([]string{";", "+"}).Draw(t, "sep")
		want := refCompactReasons(sep, ls...)
		assert.Equal(t, want, CompactReasons(sep, ls...))
		assert.Equal(t, "pre:"+want, string(AppendCompactReasons([]byte("pre:"), sep, ls...)))
	})
}

func TestCompactReasonsAllocs(t *testing.T) {
	l := []string{"capacity", "tau_append", "capacity"}
	allocs := testing.AllocsPerRun(100, func() { _ = CompactReasons("+", l) })
	assert.Equal(t, 1.0, allocs, "the result string only")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = CompactReasons("+", nil) }))
}

package topology

import (
	"regexp"
	"testing"

	"pgregory.net/rapid"
)

// The regexps validWorkerName and unsupportedAttrName replaced (compiled
// at every process start before), kept as their references.
var (
	workerNameRef            = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	unsupportedAttrDetailRef = regexp.MustCompile(`^This object does not have an attribute named "([^"]*)"\.$`)
)

// nameish draws strings mostly of the characters the rules are about.
func nameish() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.StringMatching(`[A-Za-z0-9_.\-"é ]{0,12}`),
		rapid.String(),
	)
}

func TestValidWorkerNameMatchesRegexp(t *testing.T) {
	for _, s := range []string{"", "a", "-a", "a-", "p0.x_y-z", "é", "a b", "0", "_"} {
		if got, want := validWorkerName(s), workerNameRef.MatchString(s); got != want {
			t.Errorf("validWorkerName(%q) = %v, want %v", s, got, want)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		s := nameish().Draw(rt, "s")
		if got, want := validWorkerName(s), workerNameRef.MatchString(s); got != want {
			rt.Fatalf("validWorkerName(%q) = %v, want %v", s, got, want)
		}
	})
}

func TestUnsupportedAttrNameMatchesRegexp(t *testing.T) {
	const pre = `This object does not have an attribute named "`
	check := func(t interface{ Fatalf(string, ...any) }, d string) {
		name, ok := unsupportedAttrName(d)
		m := unsupportedAttrDetailRef.FindStringSubmatch(d)
		if ok != (m != nil) || ok && name != m[1] {
			t.Fatalf("unsupportedAttrName(%q) = %q, %v; regexp %q", d, name, ok, m)
		}
	}
	for _, d := range []string{pre + `x".`, pre + `".`, pre + `x"".`, pre + `x"`, pre + `x".` + "\n", "x" + pre + `x".`, pre[:10]} {
		check(t, d)
	}
	rapid.Check(t, func(rt *rapid.T) {
		check(rt, rapid.SampledFrom([]string{pre, "", pre[:5]}).Draw(rt, "pre")+
			nameish().Draw(rt, "name")+rapid.SampledFrom([]string{`".`, `"`, "", `".x`}).Draw(rt, "suf"))
	})
}

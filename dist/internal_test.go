package dist

import (
	"os/exec"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"
)

// Any name becomes a valid DNS label within the length asked for.
func TestDNSLabelProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "name")
		max := rapid.IntRange(1, 63).Draw(t, "max")
		got := dnsLabel(s, max)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Fatalf("dnsLabel(%q, %d) = %q: %v", s, max, got, errs)
		}
		if len(got) > max && got != "pdemu" {
			t.Fatalf("dnsLabel(%q, %d) = %q: too long", s, max, got)
		}
	})
}

// A shell reads back exactly the arguments ShellJoin quoted.
func TestShellJoinRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	rapid.Check(t, func(t *rapid.T) {
		args := rapid.SliceOfN(rapid.StringMatching(`[ -~]{0,12}`), 1, 4).Draw(t, "args")
		got, err := exec.Command(sh, "-c", "printf '%s\\0' "+ShellJoin(args)).Output()
		if err != nil {
			t.Fatalf("%s: %v", ShellJoin(args), err)
		}
		want := ""
		for _, a := range args {
			want += a + "\x00"
		}
		if string(got) != want {
			t.Fatalf("ShellJoin(%q) = %s read back as %q", args, ShellJoin(args), got)
		}
	})
}

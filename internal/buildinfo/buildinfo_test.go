package buildinfo

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOf(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want Info
	}{
		{"none", nil, Info{}},
		{"devel, no vcs", &debug.BuildInfo{GoVersion: "go1.25"}, Info{OK: true, Version: "(devel)", GoVersion: "go1.25"}},
		{"tagged, clean", &debug.BuildInfo{GoVersion: "go1.25", Main: debug.Module{Version: "v1.2.0"},
			Settings: vcs("vcs.revision", "abc", "vcs.time", "2026-01-02T03:04:05Z", "vcs.modified", "false")},
			Info{OK: true, Version: "v1.2.0", Revision: "abc", Time: "2026-01-02T03:04:05Z", GoVersion: "go1.25"}},
		{"dirty", &debug.BuildInfo{Settings: vcs("vcs.revision", "abc", "vcs.modified", "true")},
			Info{OK: true, Version: "(devel)", Revision: "abc", Dirty: true}},
	} {
		got := Of(c.bi)
		assert.Equal(t, c.want, got, c.name)
		assert.Equal(t, map[bool]string{true: "+dirty", false: ""}[c.want.Dirty], got.DirtyMark(), c.name)
	}
	assert.True(t, Read().OK, "a test binary has build information")
}

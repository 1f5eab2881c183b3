// Package buildinfo reads pdemu's version from the binary's build
// information, once for both places that print it (pdemu version and
// summary.json's pdemu_version).
//
// Contract: Of is a pure function of a *debug.BuildInfo (nil: none
// recorded); Read is Of(debug.ReadBuildInfo()).
package buildinfo

import "runtime/debug"

// Info is what the build recorded.
type Info struct {
	OK        bool   // false: the binary has no build information
	Version   string // the main module's version, "(devel)" when unset
	Revision  string // the VCS revision, "" when built without VCS info
	Time      string // the revision's commit time (vcs.time), "" when unknown
	Dirty     bool   // the tree had uncommitted changes (vcs.modified)
	GoVersion string
}

// Read returns the running binary's build information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Of(nil)
	}
	return Of(bi)
}

// Of extracts Info from bi (nil: Info{}, OK false).
func Of(bi *debug.BuildInfo) Info {
	if bi == nil {
		return Info{}
	}
	in := Info{OK: true, Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			in.Revision = kv.Value
		case "vcs.time":
			in.Time = kv.Value
		case "vcs.modified":
			in.Dirty = kv.Value == "true"
		}
	}
	return in
}

// DirtyMark is "+dirty" for a build from a modified tree, else "".
func (in Info) DirtyMark() string {
	if in.Dirty {
		return "+dirty"
	}
	return ""
}

package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion returns the module version and VCS revision from the
// build info.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "pdemu (no build info)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	s := "pdemu " + v
	var rev, when, dirty string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.time":
			when = kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		s += fmt.Sprintf(", revision %s%s", rev, dirty)
		if when != "" {
			s += " (" + when + ")"
		}
	} else {
		s += ", revision unknown (built without VCS info, e.g. go run or go test)"
	}
	return s + ", " + bi.GoVersion
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print pdemu's module version and VCS revision",
		Long:    "Print the module version and the VCS revision (and whether the tree was modified) recorded in the binary's build info.",
		Example: "  pdemu version",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), buildVersion())
			return nil
		},
	}
}

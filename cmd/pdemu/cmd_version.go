package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/internal/buildinfo"
)

// buildVersion returns the module version and VCS revision from the
// build info.
func buildVersion() string {
	bi := buildinfo.Read()
	if !bi.OK {
		return "pdemu (no build info)"
	}
	s := "pdemu " + bi.Version
	if bi.Revision != "" {
		s += fmt.Sprintf(", revision %s%s", bi.Revision, bi.DirtyMark())
		if bi.Time != "" {
			s += " (" + bi.Time + ")"
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

package main

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// noArgs rejects positional arguments as bad input (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErr("%s takes no arguments, got %s", cmd.CommandPath(), strings.Join(args, " "))
	}
	return nil
}

// exactlyOne is the Args check of a command that takes one argument
// (what names it in the usage error, exit 2).
func exactlyOne(cmd, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErr("%s takes exactly one %s, got %d", cmd, what, len(args))
		}
		return nil
	}
}

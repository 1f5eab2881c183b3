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

// atLeastOne is the Args check of a command that takes one or more
// arguments (what names them in the usage error, exit 2; hint, if not
// "", says where to find one).
func atLeastOne(cmd, what, hint string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			if hint != "" {
				return usageErr("%s needs at least one %s (%s)", cmd, what, hint)
			}
			return usageErr("%s needs at least one %s", cmd, what)
		}
		return nil
	}
}

// atMostOne is the Args check of a command with an optional argument
// (what names it in the usage error, exit 2).
func atMostOne(cmd, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 1 {
			return usageErr("%s takes at most one %s, got %d: %s", cmd, what, len(args), strings.Join(args, " "))
		}
		return nil
	}
}

// withOptionalArg is the RunE of a command checked by atMostOne: run gets
// the argument, or "" when there is none.
func withOptionalArg(run func(cmd *cobra.Command, arg string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		arg := ""
		if len(args) == 1 {
			arg = args[0]
		}
		return run(cmd, arg)
	}
}

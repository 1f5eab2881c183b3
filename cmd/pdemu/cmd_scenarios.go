package main

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/scenarios"
)

// describe returns the first sentence of a scenario's leading comment,
// without the "name.hcl --" prefix.
func describe(src []byte) string {
	var para []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		text, ok := strings.CutPrefix(line, "#")
		if !ok {
			break
		}
		text = strings.TrimSpace(text)
		if text == "" {
			if len(para) > 0 {
				break
			}
			continue
		}
		para = append(para, text)
	}
	s := strings.Join(para, " ")
	if _, rest, ok := strings.Cut(s, " -- "); ok {
		s = rest
	}
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if r := []rune(s); len(r) > 100 {
		cut := string(r[:100])
		if i := strings.LastIndex(cut, " "); i > 50 {
			cut = cut[:i]
		}
		s = strings.TrimRight(cut, ",;:") + " …"
	}
	return s
}

func newScenariosCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "scenarios",
		Short: "List the embedded scenarios with a one-line description",
		Long: `List the scenarios embedded in pdemu, each with the first sentence of
its leading comment. Any of them can be named instead of a file in run,
compare and validate; 'pdemu scenarios show NAME' prints one, to copy and
edit.`,
		Example: `  pdemu scenarios
  pdemu scenarios show dp4 > my-dp4.hcl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			width := 0
			for _, n := range scenarioStems() {
				width = max(width, len(n))
			}
			for _, n := range scenarios.Names() {
				src, err := scenarios.Read(n)
				if err != nil {
					return err
				}
				mark := " "
				if n == scenarios.Default {
					mark = "*"
				}
				fmt.Fprintf(out, "%s %-*s  %s\n", mark, width, strings.TrimSuffix(n, ".hcl"), describe(src))
			}
			fmt.Fprintln(out, "(* the default; 'pdemu scenarios show NAME' prints one)")
			return nil
		},
	}
	show := &cobra.Command{
		Use:     "show NAME",
		Short:   "Print an embedded scenario's HCL",
		Example: "  pdemu scenarios show 1p3d-mlx5\n  pdemu scenarios show claude-code > my-claude-code.hcl",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("scenarios show takes exactly one NAME, got %d", len(args))
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return scenarioStems(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := scenarios.Read(args[0])
			if err != nil {
				return unknownScenario(args[0])
			}
			_, err = cmd.OutOrStdout().Write(src)
			return err
		},
	}
	c.AddCommand(show)
	return c
}

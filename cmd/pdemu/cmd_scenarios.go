package main

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
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
		Args: onlySubcommands,
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
		Use:   "show NAME",
		Short: "Print an embedded scenario's HCL, to save and edit as a file of your own",
		Long: `Print an embedded scenario's HCL. Its relative paths are rewritten so
that the output, saved in the working directory, means the same as the
embedded scenario: extends names the embedded base ("<embedded>/base/pd.hcl")
and a relative trace path resolves from the working directory (as an
embedded scenario's does, from ./scenarios). Each rewritten line says so.`,
		Example: "  pdemu scenarios show 1p3d-mlx5\n  pdemu scenarios show claude-code > my-claude-code.hcl",
		Args:    exactlyOne("scenarios show", "NAME"),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return scenarioStems(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := scenarios.Read(args[0])
			if err != nil {
				return unknownScenario(args[0])
			}
			_, err = cmd.OutOrStdout().Write(standalone(args[0], src))
			return err
		},
	}
	c.AddCommand(show)
	return c
}

// extendsLine and traceLine match a scenario's extends and trace lines
// (compiled on first use: only `scenarios show` needs them).
var (
	extendsLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*extends\s*=\s*)"([^"]*)"(.*)$`) })
	traceLine   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*trace\s*=\s*)"([^"]*)"(.*)$`) })
)

// standalone rewrites the relative extends and trace paths of the
// embedded scenario name so that src, saved as a file in the working
// directory, resolves them as the embedded scenario does (extends from
// the embedded files, traces from ./scenarios).
func standalone(name string, src []byte) []byte {
	name = strings.TrimSuffix(name, ".hcl") + ".hcl"
	dir := path.Dir(name)
	lines := strings.SplitAfter(string(src), "\n")
	for i, l := range lines {
		body, nl := strings.TrimSuffix(l, "\n"), l[len(strings.TrimSuffix(l, "\n")):]
		if m := extendsLine().FindStringSubmatch(body); m != nil && !strings.HasPrefix(m[2], topology.EmbeddedPrefix) && !path.IsAbs(m[2]) {
			lines[i] = fmt.Sprintf("%s%q%s # the embedded %s (pdemu scenarios show %s)%s", m[1], topology.EmbeddedPrefix+path.Join(dir, m[2]), m[3], path.Join(dir, m[2]), strings.TrimSuffix(name, ".hcl"), nl)
		}
		if m := traceLine().FindStringSubmatch(body); m != nil && m[2] != "" && !filepath.IsAbs(m[2]) {
			rel := filepath.ToSlash(filepath.Clean(filepath.Join("scenarios", dir, m[2])))
			lines[i] = fmt.Sprintf("%s%q%s # from the working directory (the embedded file says %q, from ./scenarios)%s", m[1], rel, m[3], m[2], nl)
		}
	}
	return []byte(strings.Join(lines, ""))
}

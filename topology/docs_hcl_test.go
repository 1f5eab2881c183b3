package topology

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/require"
)

// hclSnippets returns the HCL of a Markdown file: every ```hcl fenced
// block, and every inline code span that is a block (`fault { ... }`),
// each with its line.
func hclSnippets(md string) (snips []string, lines []int) {
	inline := regexp.MustCompile("`((?:dynamic |[a-z_]+ )(?:\"[^\"`]*\" )*\\{[^`]*\\})`")
	in, start := false, 0
	var b strings.Builder
	for i, l := range strings.Split(md, "\n") {
		switch {
		case !in && strings.HasPrefix(strings.TrimSpace(l), "```hcl"):
			in, start = true, i+2
			b.Reset()
		case in && strings.HasPrefix(strings.TrimSpace(l), "```"):
			in = false
			snips, lines = append(snips, b.String()), append(lines, start)
		case in:
			b.WriteString(l + "\n")
		default:
			for _, m := range inline.FindAllStringSubmatch(l, -1) {
				snips, lines = append(snips, m[1]+"\n"), append(lines, i+1)
			}
		}
	}
	return snips, lines
}

// TestDocsHCLParses: every HCL snippet of README.md and docs/*.md is valid
// HCL (the docs' one-line fault { at = "30s" cut = true } examples were
// not: a one-line block holds one argument).
func TestDocsHCLParses(t *testing.T) {
	files, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	files = append(files, "../README.md")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		snips, lines := hclSnippets(string(b))
		for i, s := range snips {
			n++
			_, diags := hclsyntax.ParseConfig([]byte(s), f, hcl.Pos{Line: lines[i], Column: 1})
			if diags.HasErrors() {
				t.Errorf("%s:%d: snippet is not valid HCL: %v\n%s", f, lines[i], diags, s)
			}
		}
	}
	require.Greater(t, n, 5, "the docs have HCL snippets")
}

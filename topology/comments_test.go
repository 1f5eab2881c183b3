package topology

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
)

// lexBlank is blankComments by hclsyntax's lexer: every comment token's
// bytes but its line end as spaces.
func lexBlank(t *testing.T, name string, src []byte) []byte {
	toks, diags := hclsyntax.LexConfig(src, name, hcl.InitialPos)
	require.False(t, diags.HasErrors(), "%s: %s", name, diags)
	out := append([]byte(nil), src...)
	for _, tok := range toks {
		if tok.Type != hclsyntax.TokenComment {
			continue
		}
		for i := tok.Range.Start.Byte; i < tok.Range.End.Byte; i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
			}
		}
	}
	return out
}

// TestBlankCommentsMatchesLexer: on every shipped scenario, blankComments
// blanks exactly the lexer's comment tokens, and each scenario parses to
// the same Spec with the blanking on and off.
func TestBlankCommentsMatchesLexer(t *testing.T) {
	n := 0
	require.NoError(t, fs.WalkDir(scenarios.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".hcl") {
			return err
		}
		src, err := fs.ReadFile(scenarios.FS, p)
		require.NoError(t, err)
		got := blankComments(src)
		require.Equal(t, string(lexBlank(t, p, src)), string(got), p)
		require.Len(t, got, len(src))
		if !strings.HasPrefix(p, "base/") {
			on, err := Parse(EmbeddedPrefix+p, src, Options{})
			require.NoError(t, err, p)
			blankShipped = false
			off, err := Parse(EmbeddedPrefix+p, src, Options{})
			blankShipped = true
			require.NoError(t, err, p)
			require.Equal(t, off, on, p)
		}
		n++
		return nil
	}))
	require.Greater(t, n, 10)
}

// TestBlankComments: strings keep their # and //, and what the scan is
// not sure of comes back as it was.
func TestBlankComments(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a = 1 # c\nb = 2 // d\n", "a = 1    \nb = 2     \n"},
		{`a = "x#y//z" # c` + "\n", `a = "x#y//z"    ` + "\n"},
		{`a = "q\"#" # c`, `a = "q\"#"    `},
		{`a = "${x}#" # c`, `a = "${x}#"    `},
		{"# ρ·K_d\r\nb = 1", strings.Repeat(" ", len("# ρ·K_d")) + "\r\nb = 1"}, // bytes, not runes
		{"a = <<EOT\n# x\nEOT\n", "a = <<EOT\n# x\nEOT\n"},
		{"a = 1 /* c */ # d", "a = 1 /* c */ # d"},
		{`a = "${f("#")}" # c`, `a = "${f("#")}" # c`},
		{"a = \"open\n# c\n", "a = \"open\n# c\n"},
		{"a = 1", "a = 1"},
	} {
		require.Equal(t, tc.want, string(blankComments([]byte(tc.in))), "%q", tc.in)
	}
}

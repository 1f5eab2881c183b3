package topology

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Input bounds checked before a scenario is parsed (documented in
// docs/MODEL.md, "Input bounds"): HCL's parser recurses once per level of
// brackets, so unbounded nesting is a stack overflow, not a diagnostic.
const (
	// MaxSourceBytes bounds one scenario file (the shipped ones are < 8 KiB).
	MaxSourceBytes = 1 << 20
	// MaxNesting bounds the nesting depth of blocks, brackets, parentheses
	// and template interpolations (the shipped scenarios use at most 4).
	MaxNesting = 64
)

// checkSource rejects a file over MaxSourceBytes or nested deeper than
// MaxNesting. The lexer it uses is not recursive.
func checkSource(filename string, src []byte) hcl.Diagnostics {
	start := hcl.Pos{Line: 1, Column: 1}
	if len(src) > MaxSourceBytes {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Scenario file too large",
			Detail:   fmt.Sprintf("The file is %d bytes; a scenario file may be at most %d bytes.", len(src), MaxSourceBytes),
			Subject:  &hcl.Range{Filename: filename, Start: start, End: start},
		}}
	}
	tokens, _ := hclsyntax.LexConfig(src, filename, start)
	depth := 0
	for _, t := range tokens {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl, hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			depth++
			if depth > MaxNesting {
				return hcl.Diagnostics{{
					Severity: hcl.DiagError,
					Summary:  "Scenario nested too deeply",
					Detail:   fmt.Sprintf("Blocks, brackets, parentheses and templates may be nested at most %d deep.", MaxNesting),
					Subject:  t.Range.Ptr(),
				}}
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenTemplateSeqEnd, hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			depth--
		}
	}
	return nil
}

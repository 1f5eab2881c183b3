package topology

import (
	"fmt"
	"time"

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
	// and template interpolations (the shipped scenarios use at most 4),
	// and the length of a chain of unary operators (--1, !!true: the
	// parser recurses once per operator).
	MaxNesting = 64
	// MaxExprOperators bounds the operators (arithmetic, comparison,
	// logic, conditional ?) of one expression: evaluation recurses once
	// per operator of a chain, and the conditional's parser once per ?.
	// The shipped scenarios use at most 3.
	MaxExprOperators = 4096
)

// exprOperators are the tokens MaxExprOperators counts.
var exprOperators = map[hclsyntax.TokenType]bool{
	hclsyntax.TokenStar: true, hclsyntax.TokenSlash: true, hclsyntax.TokenPlus: true, hclsyntax.TokenMinus: true,
	hclsyntax.TokenPercent: true, hclsyntax.TokenEqualOp: true, hclsyntax.TokenNotEqual: true,
	hclsyntax.TokenLessThan: true, hclsyntax.TokenLessThanEq: true, hclsyntax.TokenGreaterThan: true,
	hclsyntax.TokenGreaterThanEq: true, hclsyntax.TokenAnd: true, hclsyntax.TokenOr: true,
	hclsyntax.TokenBang: true, hclsyntax.TokenQuestion: true,
}

// checkSource rejects a file over MaxSourceBytes, nested deeper than
// MaxNesting, with a chain of more than MaxNesting unary operators or an
// expression of more than MaxExprOperators operators. The lexer it uses
// is not recursive, and the checks are one pass over its tokens: HCL's
// parser and evaluator recurse, so these must hold before it runs.
//
// An expression's operators are counted from the last newline or brace
// outside parentheses and brackets (inside them newlines do not end an
// expression), so a long list counts as one expression.
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
	inner := 0       // parentheses and brackets open
	run, ops := 0, 0 // unary-operator chain; operators of the expression
	tooComplex := func(r hcl.Range, format string, args ...any) hcl.Diagnostics {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Expression too complex",
			Detail:   fmt.Sprintf(format, args...),
			Subject:  r.Ptr(),
		}}
	}
	for _, t := range tokens {
		switch t.Type {
		case hclsyntax.TokenMinus, hclsyntax.TokenBang:
			if run++; run > MaxNesting {
				return tooComplex(t.Range, "A chain of more than %d operators - or ! in a row.", MaxNesting)
			}
		case hclsyntax.TokenNewline, hclsyntax.TokenComment:
		default:
			run = 0
		}
		if exprOperators[t.Type] {
			if ops++; ops > MaxExprOperators {
				return tooComplex(t.Range, "An expression may have at most %d operators.", MaxExprOperators)
			}
		}
		switch t.Type {
		case hclsyntax.TokenOParen, hclsyntax.TokenOBrack:
			inner++
		case hclsyntax.TokenCParen, hclsyntax.TokenCBrack:
			inner = max(inner-1, 0)
		case hclsyntax.TokenNewline, hclsyntax.TokenOBrace, hclsyntax.TokenCBrace:
			if inner == 0 {
				ops = 0
			}
		}
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

// Numeric bounds of a scenario (docs/MODEL.md, "Input bounds"). Each is far
// above any real deployment and far below what would exhaust memory or
// overflow a counter; a value outside is refused with the bound.
const (
	MaxTP            = 64      // tensor-parallel degree
	MaxPoolTokens    = 1 << 30 // kv_budget_tokens, dram_cache_tokens
	MaxRequestTokens = 1 << 24 // per-request token counts and budgets (as traces: 16.7M)
	MaxContextTokens = 1 << 24 // max_model_len (16.7M, as MaxRequestTokens)
	MaxRunning       = 1 << 20 // max_running
	MaxBlockTokens   = 1 << 16 // block_tokens
	MaxSessions      = 1 << 20 // generator sessions, max_concurrent
	MaxTurns         = 1 << 16 // generator turns per session
	MaxRequests      = 1 << 30 // max_requests
	MaxTimeScale     = 1e6     // time_scale
	MaxSessionRate   = 1e6     // session_rate, sessions per second
)

// Output sampling bounds. instances.csv gets one row per worker per
// sample_interval of emulated time, so its size is bounded by
// MinSampleInterval and, for any horizon, by MaxSampleRows through
// SampleInterval.
const (
	MinSampleInterval = time.Millisecond
	// MaxSampleRows bounds the rows of instances.csv of one run (~1 GB at
	// ~100 bytes a row).
	MaxSampleRows = 10_000_000
)

// SampleInterval returns the sampling interval a run over horizon of
// emulated time with workers workers uses: interval, widened (to a whole
// multiple of it) when needed so that workers * horizon / interval stays
// within MaxSampleRows. The run-time sampler calls it when the horizon is
// known (or grows).
func SampleInterval(interval time.Duration, workers int, horizon time.Duration) time.Duration {
	interval = max(interval, MinSampleInterval)
	if workers <= 0 || horizon <= 0 {
		return interval
	}
	rounds := int64(MaxSampleRows / workers)
	if rounds < 1 {
		rounds = 1
	}
	n := int64(horizon / interval)
	if n <= rounds {
		return interval
	}
	return time.Duration((n+rounds-1)/rounds) * interval
}

// inLeftOpen is a checkNum check for (lo, hi].
func inLeftOpen(lo, hi float64) func(float64) string {
	return func(v float64) string {
		if v <= lo || v > hi {
			return fmt.Sprintf("must be greater than %v and at most %v", lo, hi)
		}
		return ""
	}
}

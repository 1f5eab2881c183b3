package topology

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/dynblock"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Options tune parsing. The zero value is valid: no variables set, every
// preset name accepted.
type Options struct {
	// Vars are values for `variable` blocks (the CLI's -var k=v), referenced
	// in HCL as var.k. A value that looks like a decimal number or a bool
	// ("16", "0.5", "true") becomes one; anything else is a string. Setting
	// a variable the file does not declare is an error.
	Vars map[string]string

	// KnownGPU and KnownModel, when set, make unknown gpu / model preset
	// names a diagnostic. GPUNames and ModelNames feed "Did you mean"
	// suggestions in those diagnostics.
	KnownGPU   func(name string) bool
	KnownModel func(name string) bool
	// ValidTP, when set, makes a tp the worker's model cannot be split over
	// a diagnostic (its error is the detail).
	ValidTP    func(model string, tp int) error
	GPUNames   []string
	ModelNames []string

	// KnownFormat, when set, makes an unknown workload `format` a
	// diagnostic; FormatNames feed its suggestions.
	KnownFormat func(name string) bool
	FormatNames []string

	// BaseDir, when set, is the directory relative trace paths are
	// resolved against. The default is the directory of the file name
	// passed to Parse (so "<embedded>/x.hcl" needs a BaseDir if it names a
	// relative trace).
	BaseDir string

	// EmbeddedBaseDir, when set, is the directory relative trace paths
	// written in embedded files are resolved against, whatever file
	// extends them (the CLI's ./scenarios: a file of one's own that
	// extends an embedded trace scenario finds its trace as the embedded
	// scenario does). The default is BaseDir's rule.
	EmbeddedBaseDir string

	// Set overrides HCL attributes by path, each "PATH=VALUE"
	// ("router.tau_append=4096", "decode.d1.kv_budget_tokens=60000",
	// "decode.*.gpu=H100-SXM", "workload.loop=open"), applied after the
	// file is read, with the same diagnostics as the file (an unknown path
	// gets a did-you-mean). The CLI's --set.
	Set []string

	// Router, when set, swaps the routing policy (with that policy's
	// defaults) on a cluster that can run it. The CLI's --router.
	Router string

	// Trace, when set, replays this trace instead of the scenario's own
	// trace or generator (the CLI's --trace): the workload's replay
	// options (max_concurrent, share_prefix, ...; from the file or Set)
	// are checked as for a trace, the generator block is ignored, and the
	// format is detected (the scenario's format described its own trace).
	// The path is used as given.
	Trace string

	// FS, when set, is the file system a scenario's extends names are
	// read from (relative to the directory of the extending file). The
	// default is the OS file system, and the embedded scenarios for a name
	// starting with EmbeddedPrefix. ParseFS sets it.
	FS fs.FS
}

// DiagError is the error Parse and Load return for invalid input. It holds
// every diagnostic found (parsing does not stop at the first error) and the
// parsed source files, so the diagnostics can be rendered with snippets.
type DiagError struct {
	Diags hcl.Diagnostics
	Files map[string]*hcl.File
}

// diagWidth is the column at which rendered diagnostic details wrap.
const diagWidth = 100

// Error renders every diagnostic without colour: a "file:line:col:" prefix,
// then HCL's text rendering (severity and summary, a source snippet, and
// the detail).
func (e *DiagError) Error() string {
	var b bytes.Buffer
	_ = e.Write(&b, false)
	return strings.TrimRight(b.String(), "\n")
}

// Write renders the diagnostics to w like Error, with VT100 colours when
// color is set.
func (e *DiagError) Write(w io.Writer, color bool) error {
	tw := hcl.NewDiagnosticTextWriter(w, e.Files, diagWidth, color)
	for _, d := range e.Diags {
		if d == nil {
			continue
		}
		if d.Subject != nil {
			if _, err := fmt.Fprintf(w, "%s:%d:%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column); err != nil {
				return err
			}
		}
		if err := tw.WriteDiagnostic(d); err != nil {
			return err
		}
	}
	return nil
}

// Load reads the scenario file at path and parses it (see Parse). I/O
// errors are returned as they are (wrapped); invalid content yields a
// *DiagError.
func Load(path string, opts Options) (*Spec, error) {
	src, err := readLimited(path)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	return Parse(path, src, opts)
}

// Parse parses and validates an HCL scenario. filename is used in
// diagnostics, as Spec.Source, and (unless opts.BaseDir is set) to resolve
// a relative workload trace path. On invalid input it returns a *DiagError
// holding every problem found. It never panics.
func Parse(filename string, src []byte, opts Options) (spec *Spec, err error) {
	p := hclparse.NewParser()
	defer func() {
		// Belt and braces: the fuzz target exercises parse without this
		// recover, but a bug must never take the caller down with it.
		if r := recover(); r != nil {
			spec = nil
			err = &DiagError{Files: p.Files(), Diags: hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Internal error while parsing the scenario",
				Detail:   fmt.Sprintf("pdemu's topology parser panicked: %v. This is a bug; please report it with the scenario file.", r),
			}}}
		}
	}()
	return parse(p, filename, src, opts)
}

// parse is Parse without the recover.
func parse(p *hclparse.Parser, filename string, src []byte, opts Options) (*Spec, error) {
	fail := func(d hcl.Diagnostics) (*Spec, error) {
		sortDiags(d)
		return nil, &DiagError{Diags: dedupDiags(d), Files: p.Files()}
	}
	var files []*hcl.File
	body, diags := layer(p, filename, src, opts, 0, &files)
	if diags.HasErrors() || body == nil {
		return fail(diags)
	}
	for _, f := range files {
		diags = append(diags, checkNumberLiterals(f)...)
	}
	if diags.HasErrors() {
		return fail(diags)
	}
	fileStart := files[0].Body.MissingItemRange()

	// Pass 1: variables, so that every other expression can use them.
	var vh variablesHCL
	diags = append(diags, gohcl.DecodeBody(body, nil, &vh)...)
	if diags.HasErrors() {
		return fail(diags)
	}
	vars, vdiags := evalVariables(vh.Variables, opts.Vars)
	diags = append(diags, vdiags...)
	if diags.HasErrors() {
		return fail(diags)
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)},
		Functions: functions(),
	}

	// Pass 2: the rest, with dynamic blocks expanded and the command
	// line's --set and --router applied, then semantic validation.
	c := &checker{opts: opts}
	c.recordBodies(body)
	ov, odiags := newOverrides(opts, p.Files())
	diags = append(diags, odiags...)
	if diags.HasErrors() {
		return fail(diags)
	}
	rest := ov.wrap(dynblock.Expand(vh.Remain, ctx))
	var fh fileHCL
	c.decoded(gohcl.DecodeBody(wholeInts(rest, reflect.TypeOf(fh)), ctx, &fh))
	spec := c.build(filename, &fh, ctx, fileStart)
	if spec != nil {
		spec.Digest = digestFiles(files)
		spec.Vars = maps.Clone(opts.Vars)
		spec.Set = slices.Clone(opts.Set)
		spec.RouterSwap = ov.swap
	}
	c.diags = append(c.diags, ov.unused()...)

	diags = append(diags, c.diags...)
	suggestVarNames(diags, p.Files(), vars)
	diags = tidyDecodeDiags(diags)
	if diags.HasErrors() {
		return fail(diags)
	}
	return spec, nil
}

// checkNumberLiterals rejects number literals outside the float64 range.
// No attribute accepts them, and they are costly: cty keeps them exactly,
// and turning 1e999999 into a string (as a string attribute or a template
// does) takes seconds.
func checkNumberLiterals(file *hcl.File) hcl.Diagnostics {
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	return hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		lit, ok := n.(*hclsyntax.LiteralValueExpr)
		if !ok || lit.Val.Type() != cty.Number || !lit.Val.IsKnown() || lit.Val.IsNull() {
			return nil
		}
		bf := lit.Val.AsBigFloat()
		f, _ := bf.Float64()
		if !math.IsInf(f, 0) && (f != 0 || bf.Sign() == 0) {
			return nil
		}
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Number out of range",
			Detail:   "This number is too large or too small in magnitude to be used anywhere in a scenario.",
			Subject:  lit.SrcRange.Ptr(),
		}}
	})
}

// functions is the allow-list of functions available in expressions.
func functions() map[string]function.Function {
	return map[string]function.Function{
		"min":   stdlib.MinFunc,
		"max":   stdlib.MaxFunc,
		"floor": stdlib.FloorFunc,
		"ceil":  stdlib.CeilFunc,
		// For dynamic blocks: for_each = range(3), setproduct(a, b).
		"range":      countRange,
		"setproduct": boundedSetProduct,
		"format":     stdlib.FormatFunc,
	}
}

// tidyDecodeDiags rewrites and drops some of gohcl's conversion
// diagnostics:
//
//   - "value must be known" only follows another error inside the same
//     expression (an unknown value comes from an undeclared variable or a
//     failed function call), so it is dropped when that error is there;
//   - the int64 and float64 bounds in "value must be a whole number,
//     between -9223372036854775808 and 9223372036854775807" and "value must
//     be between -1797...(300 digits) and ..." are noise.
func tidyDecodeDiags(diags hcl.Diagnostics) hcl.Diagnostics {
	const (
		unknown = "Unsuitable value: value must be known"
		whole   = "Unsuitable value: value must be a whole number, between -9223372036854775808 and 9223372036854775807"
	)
	out := diags[:0]
	for _, d := range diags {
		switch {
		case strings.HasPrefix(d.Detail, "Unsuitable value: value must be between -1797693134862315"):
			d.Detail = "Unsuitable value: the number is out of range."
		case d.Detail == whole:
			d.Detail = "Unsuitable value: a whole number is required."
		case d.Detail == unknown:
			if d.Context != nil && hasOtherErrorIn(diags, d, *d.Context) {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

func hasOtherErrorIn(diags hcl.Diagnostics, self *hcl.Diagnostic, rng hcl.Range) bool {
	for _, o := range diags {
		if o != self && o.Severity == hcl.DiagError && o.Subject != nil && overlaps(*o.Subject, rng) {
			return true
		}
	}
	return false
}

// sortDiags orders diagnostics by position (diagnostics without a subject
// first), keeping the relative order of equal positions. gohcl decodes
// attributes in map order, so this is what makes output deterministic.
func sortDiags(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		default:
			return a.Start.Byte < b.Start.Byte
		}
	})
}

// maxSetProduct bounds setproduct's result: 65,536 elements is a full
// mesh of links between 256 prefill and 256 decode workers (64P192D
// needs 12,288); for_each over more blocks than that is a mistake, not a
// cluster. (range, from cty, stops at 1024 values per call.)
const maxSetProduct = 1 << 16

// boundedSetProduct is stdlib's setproduct with at most maxSetProduct
// elements.
var boundedSetProduct = function.New(&function.Spec{
	Description: "setproduct, with at most 65536 elements",
	VarParam:    &function.Parameter{Name: "sets", Type: cty.DynamicPseudoType},
	Type: func(args []cty.Value) (cty.Type, error) {
		return stdlib.SetProductFunc.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		n := 1
		for _, a := range args {
			if a.IsKnown() && !a.IsNull() && a.CanIterateElements() {
				n *= a.LengthInt()
				if n > maxSetProduct {
					return cty.NilVal, fmt.Errorf("the product has more than %d elements", maxSetProduct)
				}
			}
		}
		return stdlib.SetProductFunc.Call(args)
	},
})

// dedupDiags drops a diagnostic identical to the one before it (sorted):
// an attribute in the content of a dynamic block is checked once per
// generated block, and one message per source location is enough.
func dedupDiags(diags hcl.Diagnostics) hcl.Diagnostics {
	out := diags[:0]
	for i, d := range diags {
		if i > 0 {
			p := diags[i-1]
			if p.Severity == d.Severity && p.Summary == d.Summary && p.Detail == d.Detail &&
				(p.Subject == nil) == (d.Subject == nil) && (p.Subject == nil || *p.Subject == *d.Subject) {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

// digestFiles is Spec.Digest of the files a scenario was composed from.
func digestFiles(files []*hcl.File) string {
	h := sha256.New()
	for i := len(files) - 1; i >= 0; i-- { // base first
		fmt.Fprintf(h, "%d\n", len(files[i].Bytes))
		h.Write(files[i].Bytes)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

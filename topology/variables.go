package topology

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// evalVariables resolves variable blocks against CLI values.
func evalVariables(blocks []variableHCL, cli map[string]string) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	vals := map[string]cty.Value{}
	declared := map[string]*variableHCL{}
	names := make([]string, 0, len(blocks))
	// Defaults may use functions but not other variables.
	defCtx := &hcl.EvalContext{Functions: functions()}
	for i := range blocks {
		b := &blocks[i]
		if !hclsyntax.ValidIdentifier(b.Name) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid variable name",
				Detail:   fmt.Sprintf("%q is not a valid variable name: use letters, digits, underscores and dashes, starting with a letter.", b.Name),
				Subject:  b.NameRange.Ptr(),
			})
			continue
		}
		if prev, dup := declared[b.Name]; dup {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate variable declaration",
				Detail:   fmt.Sprintf("A variable named %q was already declared at %s. Variable names must be unique.", b.Name, prev.DefRange),
				Subject:  b.NameRange.Ptr(),
			})
			continue
		}
		declared[b.Name] = b
		names = append(names, b.Name)

		if s, ok := cli[b.Name]; ok {
			vals[b.Name] = cliValue(s)
			continue
		}
		if b.Default != nil {
			v, d := b.Default.Expr.Value(defCtx)
			diags = append(diags, d...)
			if !d.HasErrors() && !v.IsNull() && v.IsWhollyKnown() {
				vals[b.Name] = v
				continue
			}
			if d.HasErrors() {
				vals[b.Name] = cty.DynamicVal
				continue
			}
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "No value for required variable",
			Detail:   fmt.Sprintf("The variable %q has no default, so it must be set, e.g. with -var %s=VALUE.", b.Name, b.Name),
			Subject:  b.DefRange.Ptr(),
		})
		vals[b.Name] = cty.DynamicVal
	}

	keys := slices.Sorted(maps.Keys(cli))
	for _, k := range keys {
		if _, ok := declared[k]; !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Value for undeclared variable",
				Detail: fmt.Sprintf("A value was given for the variable %q, but the scenario does not declare it.%s To accept it, add a block: variable %q { default = ... }.",
					k, didYouMean(k, names), k),
			})
		}
	}
	return vals, diags
}

// cliNumber matches a decimal number; compiled on first use, not at every
// process start.
var cliNumber = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$`)
})

// cliValue types a -var value: a decimal number or bool when it looks like
// one, otherwise a string.
func cliValue(s string) cty.Value {
	switch s {
	case "true":
		return cty.True
	case "false":
		return cty.False
	}
	// Numbers beyond the float64 range stay strings: no attribute accepts
	// them (see checkNumberLiterals).
	if cliNumber().MatchString(s) {
		mantissa, _, _ := strings.Cut(strings.ToLower(s), "e")
		if f, err := strconv.ParseFloat(s, 64); err == nil && (f != 0 || !strings.ContainsAny(mantissa, "123456789")) {
			if v, err := cty.ParseNumberVal(s); err == nil {
				return v
			}
		}
	}
	return cty.StringVal(s)
}

// unsupportedAttrName is the attribute name in the detail of HCL's
// "Unsupported attribute" diagnostic: what the regexp
// ^This object does not have an attribute named "([^"]*)"\.$ captures
// (kept in validate_ref_test.go), ok false where it does not match.
func unsupportedAttrName(detail string) (name string, ok bool) {
	rest, ok := strings.CutPrefix(detail, `This object does not have an attribute named "`)
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(rest, `".`)
	if !ok || strings.Contains(name, `"`) {
		return "", false
	}
	return name, true
}

// suggestVarNames adds "Did you mean" to HCL's diagnostic for a reference to
// an undeclared var.x (HCL suggests root names, not object attributes).
func suggestVarNames(diags hcl.Diagnostics, files map[string]*hcl.File, vars map[string]cty.Value) {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	for _, d := range diags {
		if d.Summary != "Unsupported attribute" || d.Subject == nil {
			continue
		}
		file := files[d.Subject.Filename]
		if file == nil {
			continue
		}
		attr, ok := unsupportedAttrName(d.Detail)
		if !ok {
			continue
		}
		// Only for var.<name>: the subject is ".<name>" right after "var".
		start := d.Subject.Start.Byte
		if start < 3 || start > len(file.Bytes) || string(file.Bytes[start-3:start]) != "var" {
			continue
		}
		d.Summary = "Undeclared variable"
		d.Detail = fmt.Sprintf("There is no variable block named %q.%s", attr, didYouMean(attr, names))
	}
}

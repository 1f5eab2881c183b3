package topology

import (
	"math/big"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// checkSeed checks a seed attribute (absent: def): a whole number from 0
// to 2^64-1, kept exactly. Decoded into a uint64 directly, seed = 4.5
// silently ran as 4; a float64 would round seeds above 2^53.
func (c *checker) checkSeed(v cty.Value, rng hcl.Range, def uint64, help string) uint64 {
	if v == cty.NilVal || v.IsNull() {
		return def
	}
	bad := func(got string) uint64 {
		c.errorf(rng, "Invalid value for \"seed\"", "%s must be a whole number from 0 to 18446744073709551615; got %s.", describe("seed", help), got)
		return def
	}
	if !v.IsWhollyKnown() {
		return bad("an unknown value")
	}
	n, err := convert.Convert(v, cty.Number)
	if err != nil {
		return bad(v.Type().FriendlyName())
	}
	bf := n.AsBigFloat()
	if !bf.IsInt() || bf.Sign() < 0 {
		return bad(bf.Text('g', -1))
	}
	u, acc := bf.Uint64()
	if acc != big.Exact {
		return bad(bf.Text('g', -1))
	}
	return u
}

// countRange is range() for counts: every argument a whole number, and
// range(n) needs n ≥ 0. cty's range(-3) counts down ([0, -1, -2]: a
// worker d-1) and range(2.5) makes three; for_each = range(var.decodes)
// with decodes = -3 or 2.5 must be an error instead.
var countRange = function.New(&function.Spec{
	Description: "range(n) = [0, 1, ..., n-1]; range(start, end[, step]); whole numbers only",
	VarParam:    &function.Parameter{Name: "params", Type: cty.Number},
	Type:        function.StaticReturnType(cty.List(cty.Number)),
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		for i, a := range args {
			if a.IsNull() || !a.IsKnown() {
				return cty.NilVal, function.NewArgErrorf(i, "must be a whole number")
			}
			if bf := a.AsBigFloat(); !bf.IsInt() {
				return cty.NilVal, function.NewArgErrorf(i, "must be a whole number, got %s (a count is never fractional)", bf.Text('g', -1))
			}
		}
		if len(args) == 1 && args[0].AsBigFloat().Sign() < 0 {
			return cty.NilVal, function.NewArgErrorf(0, "range(n) needs n >= 0, got %s (a count is never negative)", args[0].AsBigFloat().Text('g', -1))
		}
		return stdlib.RangeFunc.Call(args)
	},
})

package topology

import (
	"reflect"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// gohcl decodes a number into an int field by truncating it (gocty):
// sessions = 2.5 ran 2 sessions, tp = 1.5 ran tp 1. wholeInts wraps a
// body so that every attribute an integer field of the target struct
// type receives must evaluate to a whole number, with a diagnostic at
// the attribute otherwise; nested blocks are wrapped for their own types.

// intSchema lists a gohcl struct type's integer attributes and the struct
// type of each of its nested blocks.
func intSchema(t reflect.Type) (ints map[string]bool, blocks map[string]reflect.Type) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	ints, blocks = map[string]bool{}, map[string]reflect.Type{}
	if t.Kind() != reflect.Struct {
		return ints, blocks
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, kind, _ := strings.Cut(f.Tag.Get("hcl"), ",")
		if name == "" {
			continue
		}
		ft := f.Type
		switch kind {
		case "", "optional":
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				ints[name] = true
			}
		case "block":
			blocks[name] = ft
		}
	}
	return ints, blocks
}

// wholeInts wraps body for decoding into a value of type t.
func wholeInts(body hcl.Body, t reflect.Type) hcl.Body {
	ints, blocks := intSchema(t)
	if len(ints) == 0 && len(blocks) == 0 {
		return body
	}
	return &wholeBody{Body: body, ints: ints, blocks: blocks}
}

type wholeBody struct {
	hcl.Body
	ints   map[string]bool
	blocks map[string]reflect.Type
}

func (b *wholeBody) wrap(c *hcl.BodyContent) *hcl.BodyContent {
	if c == nil {
		return c
	}
	out := *c
	out.Attributes = b.attrs(c.Attributes)
	out.Blocks = make(hcl.Blocks, len(c.Blocks))
	for i, blk := range c.Blocks {
		nb := *blk
		if t, ok := b.blocks[blk.Type]; ok {
			nb.Body = wholeInts(blk.Body, t)
		}
		out.Blocks[i] = &nb
	}
	return &out
}

func (b *wholeBody) attrs(as hcl.Attributes) hcl.Attributes {
	out := make(hcl.Attributes, len(as))
	for k, a := range as {
		if b.ints[k] {
			na := *a
			na.Expr = wholeExpr{a.Expr}
			a = &na
		}
		out[k] = a
	}
	return out
}

func (b *wholeBody) Content(s *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	c, d := b.Body.Content(s)
	return b.wrap(c), d
}

func (b *wholeBody) PartialContent(s *hcl.BodySchema) (*hcl.BodyContent, hcl.Body, hcl.Diagnostics) {
	c, rest, d := b.Body.PartialContent(s)
	return b.wrap(c), rest, d
}

func (b *wholeBody) JustAttributes() (hcl.Attributes, hcl.Diagnostics) {
	as, d := b.Body.JustAttributes()
	return b.attrs(as), d
}

// wholeExpr is an integer attribute's expression: its value must be a
// whole number.
type wholeExpr struct{ hcl.Expression }

func (e wholeExpr) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	v, d := e.Expression.Value(ctx)
	if d.HasErrors() || v.IsNull() || !v.IsWhollyKnown() {
		return v, d
	}
	if t := v.Type(); t.IsListType() || t.IsTupleType() { // [MIN, MAX]
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if _, ed := (wholeExpr{hcl.StaticExpr(ev, e.Expression.Range())}).Value(ctx); ed.HasErrors() {
				return v, append(d, ed...)
			}
		}
		return v, d
	}
	n, err := convert.Convert(v, cty.Number)
	if err != nil {
		return v, d // the decoder says what is wrong with the type
	}
	if bf := n.AsBigFloat(); !bf.IsInt() {
		return v, append(d, &hcl.Diagnostic{
			Severity:    hcl.DiagError,
			Summary:     "Not a whole number",
			Detail:      "This attribute counts something, so it must be a whole number; got " + bf.Text('g', -1) + ".",
			Subject:     e.Expression.Range().Ptr(),
			Expression:  e.Expression,
			EvalContext: ctx,
		})
	}
	return v, d
}

package topology

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/pdemu/pdemu/internal/regular"
	"github.com/pdemu/pdemu/scenarios"
)

// A scenario file may extend another one, Terraform-override style:
//
//	extends = "1p3d-mlx5.hcl"
//
// names its base (relative to the extending file's directory; a name
// starting with EmbeddedPrefix is read from the embedded scenarios). The
// file is then an override file for its base, with these rules:
//
//   - a top-level attribute replaces the base's attribute of that name;
//   - a block is matched with the base's block of the same type and labels
//     (router, workload, global_router and local_router, which a scenario
//     has at most one of, by type alone). A matched block with the same
//     labels is merged: its attributes replace the base's, and its nested
//     blocks are merged by the same rule (generator and a dynamic block's
//     content by type alone; other nested blocks of one type, e.g. fault,
//     replace all of the base's blocks of that type). A matched block with
//     other labels (router "vanilla" over router "kvc") replaces the base's;
//   - an unmatched block is added after the base's blocks;
//   - a base block is matched once: a second override block of the same
//     type and labels is added as written (two dynamic "crash" blocks
//     stay two; two decode "d1" blocks are refused as duplicates, as in a
//     plain file).
//
// `dynamic "TYPE"` blocks (hcl/v2's ext/dynblock) are matched like blocks
// of type "dynamic" labelled TYPE, so an override can change the content of
// the blocks a base generates. Every attribute keeps the source range of
// the file it was written in, so diagnostics point at the right file:line.
// Bases may extend other bases, up to maxExtendsDepth.

// EmbeddedPrefix is the pseudo-directory of the embedded scenarios in
// file names: Parse("<embedded>/1p3d-tcp.hcl", ...) resolves its extends
// in the embedded file system, as does extends = "<embedded>/1p3d-mlx5.hcl"
// in a file on disk.
const EmbeddedPrefix = "<embedded>/"

const maxExtendsDepth = 8

// singletonBlocks are matched by type alone when merging.
var singletonBlocks = map[string]bool{
	"router": true, "workload": true, "global_router": true, "local_router": true,
	"generator": true, "content": true, "mesh": true,
}

// ParseFS parses the scenario name in fsys: like Parse, with extends
// resolved in fsys. Diagnostics name files as in fsys.
func ParseFS(fsys fs.FS, name string, opts Options) (*Spec, error) {
	src, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	opts.FS = fsys
	return Parse(name, src, opts)
}

// readBase reads the file an extends attribute names.
// shipped reports whether src is, byte for byte, the embedded scenario
// filename names: checkSource passes every one of them
// (TestShippedScenariosPassCheckSource), so layer skips its second lexing
// of the file (~0.4 % of a Mooncake run's CPU).
func shipped(filename string, src []byte) bool {
	name, ok := strings.CutPrefix(filename, EmbeddedPrefix)
	if !ok {
		return false
	}
	b, err := fs.ReadFile(scenarios.FS, path.Clean(name))
	return err == nil && string(b) == string(src)
}

func readBase(from, name string, opts Options) (string, []byte, error) {
	switch {
	case strings.HasPrefix(name, EmbeddedPrefix):
		// Absolute in the embedded scenarios.
	case strings.HasPrefix(from, EmbeddedPrefix):
		name = EmbeddedPrefix + path.Join(path.Dir(strings.TrimPrefix(from, EmbeddedPrefix)), name)
	case opts.FS != nil:
		name = path.Join(path.Dir(from), name)
	case filepath.IsAbs(name):
	default:
		name = filepath.Join(filepath.Dir(from), name)
	}
	var (
		b   []byte
		err error
	)
	switch {
	case strings.HasPrefix(name, EmbeddedPrefix):
		b, err = fs.ReadFile(scenarios.FS, path.Clean(strings.TrimPrefix(name, EmbeddedPrefix)))
	case opts.FS != nil:
		b, err = fs.ReadFile(opts.FS, path.Clean(name))
	default:
		b, err = readLimited(name)
	}
	return name, b, err
}

// readLimited reads a scenario file from disk: a regular file of at most
// MaxSourceBytes (a device or a FIFO, as the scenario or named by
// extends, is refused before open(2) could block on it, not read
// forever).
func readLimited(name string) ([]byte, error) {
	b, over, err := regular.ReadAll(name, MaxSourceBytes)
	if over {
		return nil, fmt.Errorf("%s is over the %d-byte limit of a scenario file", name, MaxSourceBytes)
	}
	return b, err
}

// layer parses filename (and, following extends, its bases) and returns
// the merged body. files lists every parsed file, the top one first.
func layer(p *hclparse.Parser, filename string, src []byte, opts Options, depth int, files *[]*hcl.File) (*hclsyntax.Body, hcl.Diagnostics) {
	parsed := src
	if !shipped(filename, src) {
		if diags := checkSource(filename, src); diags.HasErrors() {
			return nil, diags
		}
	} else if blankShipped {
		parsed = blankComments(src) // the same tokens, lines and columns, no comment text (comments.go)
	}
	file, diags := p.ParseHCL(parsed, filename)
	if file != nil {
		file.Bytes = src // diagnostics quote the file as it is
	}
	if diags.HasErrors() || file == nil {
		return nil, diags
	}
	*files = append(*files, file)
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return nil, diags
	}
	ext, has := body.Attributes["extends"]
	if !has {
		return body, diags
	}
	rest := *body
	rest.Attributes = make(hclsyntax.Attributes, len(body.Attributes))
	for k, v := range body.Attributes {
		if k != "extends" {
			rest.Attributes[k] = v
		}
	}
	bad := func(summary, format string, args ...any) (*hclsyntax.Body, hcl.Diagnostics) {
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: summary,
			Detail: fmt.Sprintf(format, args...), Subject: ext.Expr.Range().Ptr(),
		})
	}
	v, vd := ext.Expr.Value(nil)
	if vd.HasErrors() || v.Type() != cty.String || v.IsNull() || v.AsString() == "" {
		return bad("Invalid extends", "\"extends\" must be a literal string naming the scenario file this one overrides, e.g. extends = \"1p3d-mlx5.hcl\".")
	}
	if depth >= maxExtendsDepth {
		return bad("Too many levels of extends", "A scenario may extend a chain of at most %d files (a cycle?).", maxExtendsDepth)
	}
	name, bsrc, err := readBase(filename, v.AsString(), opts)
	if err != nil {
		hint := ""
		if _, e := fs.Stat(scenarios.FS, path.Clean(v.AsString())); e == nil && !strings.HasPrefix(v.AsString(), EmbeddedPrefix) {
			hint = fmt.Sprintf(" %q is an embedded scenario: to extend it from a file of your own, write extends = %q.", v.AsString(), EmbeddedPrefix+v.AsString())
		}
		return bad("Cannot read the base scenario", "%s.%s", err, hint)
	}
	for _, f := range *files {
		if f.Body.MissingItemRange().Filename == name {
			return bad("Cyclic extends", "%s extends itself through %q.", name, v.AsString())
		}
	}
	base, bd := layer(p, name, bsrc, opts, depth+1, files)
	diags = append(diags, bd...)
	if base == nil {
		return nil, diags
	}
	return mergeBody(base, &rest, true), diags
}

// blockKey is how an override block finds its base block.
func blockKey(b *hclsyntax.Block) string {
	if singletonBlocks[b.Type] {
		return b.Type
	}
	return b.Type + "\x00" + strings.Join(b.Labels, "\x00")
}

// mergeBody applies the override body over to base (see the package rules
// above) and returns a new body; neither input is modified. An override
// block matches a base block at most once: a second override block of the
// same type and labels is kept as written (two dynamic "crash" blocks stay
// two; two decode "d1" blocks are then reported as duplicates, as in a
// plain file). Linear in the number of blocks.
func mergeBody(base, over *hclsyntax.Body, top bool) *hclsyntax.Body {
	out := *base
	out.Attributes = make(hclsyntax.Attributes, len(base.Attributes)+len(over.Attributes))
	for k, v := range base.Attributes {
		out.Attributes[k] = v
	}
	for k, v := range over.Attributes {
		out.Attributes[k] = v
	}
	out.Blocks = append(make(hclsyntax.Blocks, 0, len(base.Blocks)+len(over.Blocks)), base.Blocks...)
	index := map[string]int{} // block key → its base block in out.Blocks (the last one of that key)
	reindex := func() {
		clear(index)
		for i, x := range out.Blocks[:len(out.Blocks)] {
			index[blockKey(x)] = i
		}
	}
	reindex()
	used := map[string]bool{} // keys an earlier override block already took
	// Nested blocks that are neither singletons nor labelled (fault) are
	// replaced as a group: Terraform's rule for nested blocks.
	replaced := map[string]bool{}
	for _, b := range over.Blocks {
		if !top && !singletonBlocks[b.Type] && len(b.Labels) == 0 {
			if !replaced[b.Type] {
				replaced[b.Type] = true
				kept := make(hclsyntax.Blocks, 0, len(out.Blocks))
				for _, x := range out.Blocks {
					if x.Type != b.Type {
						kept = append(kept, x)
					}
				}
				out.Blocks = kept
				reindex() // once per replaced type
			}
			out.Blocks = append(out.Blocks, b)
			continue
		}
		k := blockKey(b)
		i, ok := index[k]
		switch {
		case !ok || used[k]:
			out.Blocks = append(out.Blocks, b)
		case slicesEqual(out.Blocks[i].Labels, b.Labels):
			m := *out.Blocks[i]
			m.Body = mergeBody(out.Blocks[i].Body, b.Body, false)
			out.Blocks[i] = &m
		default:
			out.Blocks[i] = b
		}
		used[k] = true
	}
	return &out
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

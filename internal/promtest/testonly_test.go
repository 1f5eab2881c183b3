package promtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testOnly are the packages for _test.go files only (their package docs
// say so); a non-test file importing one would build test helpers, and
// testify, into pdemu.
var testOnly = []string{
	"github.com/pdemu/pdemu/internal/promtest",
	"github.com/pdemu/pdemu/internal/routebench",
	"github.com/pdemu/pdemu/internal/testkit",
	"github.com/pdemu/pdemu/internal/testlog",
}

// No non-test Go file of the repository imports a test-only package, so
// the contract the package docs state is checked, not only written.
func TestOnlyTestsImportTestHelpers(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		for _, pkg := range testOnly {
			if strings.HasPrefix(filepath.ToSlash(rel), strings.TrimPrefix(pkg, "github.com/pdemu/pdemu/")+"/") {
				return nil // the helper packages themselves
			}
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			assert.NotContains(t, testOnly, path, "%s imports a test-only package", rel)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 100, "the walk found the repository's Go files")
}

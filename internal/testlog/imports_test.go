package testlog

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testOnly are the module's test-helper packages: only _test.go files may
// import them (the packages' own files aside).
var testOnly = []string{
	"github.com/pdemu/pdemu/internal/testlog",
	"github.com/pdemu/pdemu/internal/testkit",
	"github.com/pdemu/pdemu/internal/promtest",
}

// nonTestImporters lists, as "file: import", the non-test Go files under
// root that import one of pkgs, leaving out the files of the packages
// themselves (module is root's module path).
func nonTestImporters(root, module string, pkgs []string) ([]string, error) {
	var bad []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		own := module + "/" + filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			path, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				return err
			}
			for _, pkg := range pkgs {
				if path == pkg && own != pkg {
					bad = append(bad, filepath.ToSlash(filepath.Join(rel, filepath.Base(p)))+": "+path)
				}
			}
		}
		return nil
	})
	return bad, err
}

// TestOnlyTestsImportTestHelpers: no non-test file of the module imports
// a test-helper package.
func TestOnlyTestsImportTestHelpers(t *testing.T) {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bad, err := nonTestImporters(root, "github.com/pdemu/pdemu", testOnly)
	require.NoError(t, err)
	assert.Empty(t, bad, "test-only packages imported by non-test code")
}

// TestNonTestImportersFindsOne: the check sees a non-test importer, and
// passes a _test.go importer and the helper's own files.
func TestNonTestImportersFindsOne(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	imp := func(pkg string) string { return "package x\nimport _ \"" + pkg + "\"\n" }
	write("a/a.go", imp("m/internal/testlog"))
	write("a/a_test.go", imp("m/internal/testlog"))
	write("internal/testlog/own.go", imp("m/internal/testlog"))
	write("b/b.go", imp("fmt"))
	bad, err := nonTestImporters(root, "m", []string{"m/internal/testlog"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a/a.go: m/internal/testlog"}, bad)
}

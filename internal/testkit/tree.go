// Package testkit holds setup that tests of several packages repeat.
//
// Contract: test code only (nothing outside a _test.go file imports it);
// every helper fails the test it is given instead of returning an error.
package testkit

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// ReadTree returns every file under dir by its slash-separated path
// relative to dir (relative path → contents), for comparing two output
// trees byte for byte.
func ReadTree(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatalf("read tree %s: %v", dir, err)
	}
	return out
}

package testkit

// This file: reading an output tree back, for the tests that compare two
// runs' files byte for byte (a failure fails the test it is given).

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

// Package scenarios embeds the HCL scenario files that ship with pdemu.
// They are commented examples meant to be copied and edited; most extend a
// shared base (extends = "base/pd.hcl" or another scenario) and change a
// few lines, so a copy needs its base too, or extends =
// "<embedded>/NAME.hcl" to keep using the embedded one. The topology
// package parses them and resolves extends in FS (this package does not
// import it).
package scenarios

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

// FS holds every *.hcl scenario in this directory, at the root, and the
// shared bases they extend under base/ (not scenarios on their own).
//
//go:embed *.hcl base/*.hcl
var FS embed.FS

// Default is the scenario used when the user names none.
const Default = "1p3d-mlx5.hcl"

// Names returns the embedded scenario file names (e.g. "1p3d-mlx5.hcl"),
// sorted.
func Names() []string {
	entries, err := fs.ReadDir(FS, ".")
	if err != nil {
		return nil // cannot happen for an embed.FS root
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// Read returns the contents of the embedded scenario name. The ".hcl"
// suffix may be left out ("1p3d-mlx5"). The error wraps fs.ErrNotExist for
// an unknown name.
func Read(name string) ([]byte, error) {
	b, err := FS.ReadFile(name)
	if err != nil && !strings.HasSuffix(name, ".hcl") {
		if b2, err2 := FS.ReadFile(name + ".hcl"); err2 == nil {
			return b2, nil
		}
	}
	return b, err
}

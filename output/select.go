package output

import (
	"fmt"
	"strings"
)

// OutputNames are the names --outputs takes: each file of Files without
// its extension.
func OutputNames() []string {
	out := make([]string, len(Files))
	for i, f := range Files {
		out[i] = strings.TrimSuffix(strings.TrimSuffix(f, ".csv"), ".jsonl")
		out[i] = strings.TrimSuffix(out[i], ".json")
	}
	return out
}

// ParseOutputs reads --outputs: a comma list of OutputNames ("" or "all"
// = every file). It returns the file names in Files order, nil for all;
// summary.json, the marker of a run directory, is always included. An
// unknown or repeated name is an error naming it.
func ParseOutputs(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return nil, nil
	}
	names := OutputNames()
	want := map[string]bool{Marker: true}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		found := false
		for i, name := range names {
			if n == name || n == Files[i] {
				if want[Files[i]] && Files[i] != Marker {
					return nil, fmt.Errorf("--outputs %q: %s given twice", s, n)
				}
				want[Files[i]], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("--outputs %q: unknown output %q; want a comma list of %s (or all)", s, n, strings.Join(names, ", "))
		}
	}
	var out []string
	for _, f := range Files {
		if want[f] {
			out = append(out, f)
		}
	}
	return out, nil
}

// keeps reports whether the options write file name.
func (o WriteOptions) keeps(name string) bool {
	if o.Outputs == nil || name == Marker {
		return true
	}
	for _, f := range o.Outputs {
		if f == name {
			return true
		}
	}
	return false
}

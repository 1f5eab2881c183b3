package topology

import "sort"

// The three policy tables (policies: router blocks; localPolicies and
// globalPolicies: bucket routing) are read the same way: by name, and as
// a sorted list of names for diagnostics and docs.

// policyRow is a row of a policy table.
type policyRow interface{ rowName() string }

func (p policy) rowName() string       { return p.name }
func (p localPolicy) rowName() string  { return p.name }
func (p globalPolicy) rowName() string { return p.name }

// rowNames returns the names of rows, sorted.
func rowNames[R policyRow](rows []R) []string {
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.rowName()
	}
	sort.Strings(names)
	return names
}

// findRow returns the row of rows named name, or nil.
func findRow[R policyRow](rows []R, name string) *R {
	for i := range rows {
		if rows[i].rowName() == name {
			return &rows[i]
		}
	}
	return nil
}

package gpu

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// mustLookup returns the catalog entry name by lookup (LookupModel or
// LookupGPU), failing the test when it is not there.
func mustLookup[T any](t testing.TB, lookup func(string) (T, error), name string) T {
	t.Helper()
	v, err := lookup(name)
	require.NoError(t, err)
	return v
}

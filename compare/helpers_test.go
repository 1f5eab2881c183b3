package compare_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkCase checks one table case of a function returning (got, err):
// with wantErr set, err must contain it; otherwise err must be nil and got
// equal want.
func checkCase[T any](t *testing.T, got T, err error, want T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		require.Error(t, err)
		assert.Contains(t, err.Error(), wantErr)
		return
	}
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

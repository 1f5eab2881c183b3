package testkit

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// JSON decodes the JSON text s into a T; the test fails (naming s) when
// it does not decode.
func JSON[T any](t testing.TB, s string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	return v
}

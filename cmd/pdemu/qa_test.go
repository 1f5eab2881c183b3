package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestQABadFlagsExit2 collects bad flag values found in review that must be
// refused as bad input (exit 2), not as a runtime failure (exit 1).
func TestQABadFlagsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"models", "--mem-fraction", "2"},
		{"models", "--mem-fraction", "0"},
		{"models", "--mem-fraction", "NaN"},
	} {
		_, _, err := runCLI(t, args...)
		assert.Equal(t, 2, exitCode(err), "%v: %v", args, err)
	}
}

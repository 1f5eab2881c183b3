package transfer_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// tb is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// checker is a minimal stand-in for testify's assert/require: testify
// v1.12.1's assert package imports go.yaml.in/yaml/v3, whose go.sum entry
// the module does not (yet) carry, so this package cannot import it.
// assert.X reports and continues; require.X stops the test.
type checker struct{ fatal bool }

var (
	assert  = checker{fatal: false}
	require = checker{fatal: true}
)

func (c checker) fail(t tb, msg string, msgAndArgs []any) {
	t.Helper()
	if len(msgAndArgs) > 0 {
		if f, ok := msgAndArgs[0].(string); ok {
			msg += ": " + fmt.Sprintf(f, msgAndArgs[1:]...)
		}
	}
	if c.fatal {
		t.Fatal(msg)
	}
	t.Error(msg)
}

func (c checker) Equal(t tb, want, got any, msgAndArgs ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		c.fail(t, fmt.Sprintf("not equal:\nwant %+v\n got %+v", want, got), msgAndArgs)
	}
}

func (c checker) True(t tb, v bool, msgAndArgs ...any) {
	t.Helper()
	if !v {
		c.fail(t, "expected true", msgAndArgs)
	}
}

func (c checker) False(t tb, v bool, msgAndArgs ...any) {
	t.Helper()
	if v {
		c.fail(t, "expected false", msgAndArgs)
	}
}

func (c checker) Zero(t tb, v any, msgAndArgs ...any) {
	t.Helper()
	if v != nil && !reflect.ValueOf(v).IsZero() {
		c.fail(t, fmt.Sprintf("expected zero, got %+v", v), msgAndArgs)
	}
}

func (c checker) NoError(t tb, err error, msgAndArgs ...any) {
	t.Helper()
	if err != nil {
		c.fail(t, fmt.Sprintf("unexpected error: %v", err), msgAndArgs)
	}
}

func (c checker) Error(t tb, err error, msgAndArgs ...any) {
	t.Helper()
	if err == nil {
		c.fail(t, "expected an error", msgAndArgs)
	}
}

func (c checker) ErrorIs(t tb, err, target error, msgAndArgs ...any) {
	t.Helper()
	if !errors.Is(err, target) {
		c.fail(t, fmt.Sprintf("error %v is not %v", err, target), msgAndArgs)
	}
}

func (c checker) Contains(t tb, s, sub string, msgAndArgs ...any) {
	t.Helper()
	if !strings.Contains(s, sub) {
		c.fail(t, fmt.Sprintf("%q does not contain %q", s, sub), msgAndArgs)
	}
}

func (c checker) Len(t tb, v any, n int, msgAndArgs ...any) {
	t.Helper()
	if l := reflect.ValueOf(v).Len(); l != n {
		c.fail(t, fmt.Sprintf("length %d, want %d: %+v", l, n, v), msgAndArgs)
	}
}

func (c checker) InDelta(t tb, want, got, delta float64, msgAndArgs ...any) {
	t.Helper()
	if !(math.Abs(want-got) <= delta) {
		c.fail(t, fmt.Sprintf("%g not within %g of %g", got, delta, want), msgAndArgs)
	}
}

// InRange checks lo <= got <= hi.
func (c checker) InRange(t tb, got, lo, hi float64, msgAndArgs ...any) {
	t.Helper()
	if !(got >= lo && got <= hi) {
		c.fail(t, fmt.Sprintf("%g not in [%g, %g]", got, lo, hi), msgAndArgs)
	}
}

func (c checker) Panics(t tb, f func(), msgAndArgs ...any) {
	t.Helper()
	panicked := func() (p bool) {
		defer func() { p = recover() != nil }()
		f()
		return false
	}()
	if !panicked {
		c.fail(t, "expected a panic", msgAndArgs)
	}
}

package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Skipper is implemented by every loader: Skipped is the number of bad
// records (lines, requests or files) dropped because of LoadOptions.SkipBad.
type Skipper interface{ Skipped() int }

// RecordError describes a bad trace record.
type RecordError struct {
	File  string // file name as given
	Line  int    // 1-based line for line-oriented files, 0 otherwise
	Index string // position inside a JSON document, e.g. "requests[3]"
	Field string // offending field; "" when the whole record is bad
	Err   error
}

// Error formats as `file:line: field "input_length": reason` (or
// `file: requests[3]: field "in": reason` for JSON documents).
func (e *RecordError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Index != "" {
		b.WriteString(": ")
		b.WriteString(e.Index)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("bad record")
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *RecordError) Unwrap() error { return e.Err }

// fieldErr is a validation failure of one field, located later.
type fieldErr struct {
	field string
	err   error
}

func (e *fieldErr) Error() string { return fmt.Sprintf("field %q: %v", e.field, e.err) }

func badField(field, format string, args ...any) error {
	return &fieldErr{field: field, err: fmt.Errorf(format, args...)}
}

// locate turns a parse/validation error into a RecordError.
func locate(file string, line int, index string, err error) error {
	re := &RecordError{File: file, Line: line, Index: index, Err: err}
	var fe *fieldErr
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &fe):
		re.Field, re.Err = fe.field, fe.err
	case errors.As(err, &te):
		re.Field = te.Field
		re.Err = fmt.Errorf("cannot use JSON %s as %s", te.Value, te.Type)
	}
	return re
}

// maxTokens caps every token count (16.7 M): larger values are bad records,
// which also bounds the memory a single synthesized request can take.
const maxTokens = 1 << 24

// satAdd adds durations, saturating instead of overflowing.
func satAdd(a, b time.Duration) time.Duration {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// intField validates an optional JSON number as an integer in [lo, maxTokens].
func intField(name string, v *float64, lo int) (int, error) {
	if v == nil {
		return 0, badField(name, "missing")
	}
	f := *v
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, badField(name, "%v is not an integer", f)
	}
	if f < float64(lo) || f > maxTokens {
		return 0, badField(name, "%v out of range [%d, %d]", f, lo, maxTokens)
	}
	return int(f), nil
}

// outputField reads an output length: negative is an error. 0 (cancelled
// requests in real traces) is replayed as 1, the first token, which ends
// the request (OutputLen >= 1 holds everywhere), and counted in *zeros so
// that the loader's Warnings say so (docs/MODEL.md, "Input bounds").
func outputField(name string, v *float64, zeros *int) (int, error) {
	n, err := intField(name, v, 0)
	if err == nil && n == 0 {
		*zeros++
	}
	return max(n, 1), err
}

// Warner is implemented by every loader: Warnings describes what was
// replayed differently from what the trace says (e.g. requests with 0
// output tokens), for the caller to show. Nil when nothing was.
type Warner interface{ Warnings() []string }

// maxFileBytes bounds a whole-document trace file (a Claude Code session),
// like maxLine bounds a line.
const maxFileBytes = maxLine

// durField converts a non-negative number of unit to a Duration.
func durField(name string, v float64, unit time.Duration) (time.Duration, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, badField(name, "%v is not finite", v)
	}
	d := v * float64(unit)
	if math.Abs(d) > float64(100*365*24*time.Hour) {
		return 0, badField(name, "%v out of range", v)
	}
	return time.Duration(math.Round(d)), nil
}

// requiredHashIDs is a record's hash_ids field where the format requires
// it (Bailian, Claude Code): present, and at most checkBlocks allows.
func requiredHashIDs(ids *idList, in, bt int) ([]uint64, error) {
	if ids == nil {
		return nil, badField("hash_ids", "missing")
	}
	if err := checkBlocks("hash_ids", len(*ids), in, bt); err != nil {
		return nil, err
	}
	return []uint64(*ids), nil
}

// checkBlocks validates the number of hash ids against the prompt length:
// at most ceil(in/bt) (traces such as Mooncake also hash the last, partial
// block).
func checkBlocks(field string, n, in, bt int) error {
	if limit := (in + bt - 1) / bt; n > limit {
		return badField(field, "%d blocks of %d tokens exceed the %d-token prompt", n, bt, in)
	}
	return nil
}

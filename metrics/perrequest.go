package metrics

import (
	"io"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// PerRequestColumn is one column of per_request.csv: its header name, its
// unit as docs/OUTPUTS.md states it ("–" for none), and the appending of a
// record's field, CSV-escaped, to a row.
//
// PerRequestColumns is the one list of the file's columns: the header
// (PerRequestHeader), every row (AppendPerRequestRow) and the docs test
// (output's TestOutputsDocumented) are derived from it. To add a column,
// add a row here at its place and a row to the per_request.csv table of
// docs/OUTPUTS.md (then regenerate the goldens).
type PerRequestColumn struct {
	Name   string
	Unit   string
	Append func(b []byte, r *Record) []byte
}

// PerRequestColumns are per_request.csv's columns, in file order.
var PerRequestColumns = perRequestColumns()

// PerRequestHeader is the header of per_request.csv (PerRequestColumns'
// names).
var PerRequestHeader = func() []string {
	h := make([]string, len(PerRequestColumns))
	for i, c := range PerRequestColumns {
		h[i] = c.Name
	}
	return h
}()

func perRequestColumns() []PerRequestColumn {
	cols := []PerRequestColumn{
		{"id", "–", func(b []byte, r *Record) []byte { return strconv.AppendInt(b, r.ID, 10) }},
		{"session", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.Session) }},
		{"turn", "–", func(b []byte, r *Record) []byte { return strconv.AppendInt(b, int64(r.Turn), 10) }},
		{"arrival_ms", "ms", func(b []byte, r *Record) []byte { return appendMS(b, r.Arrival) }},
		{"ttft_ms", "ms", func(b []byte, r *Record) []byte { return appendMS(b, r.TTFT) }},
		{"e2e_ms", "ms", func(b []byte, r *Record) []byte { return appendMS(b, r.E2E) }},
		{"mode", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.Mode) }},
		{"reason", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.Reason) }},
		{"p_worker", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.P) }},
		{"d_worker", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.D) }},
		{"input_tokens", "tokens", func(b []byte, r *Record) []byte { return strconv.AppendInt(b, int64(r.InputTokens), 10) }},
		{"output_tokens", "tokens", func(b []byte, r *Record) []byte { return strconv.AppendInt(b, int64(r.OutputTokens), 10) }},
		{"append_tokens", "tokens", func(b []byte, r *Record) []byte { return strconv.AppendInt(b, int64(r.AppendTokens), 10) }},
		{"cached_tokens", "tokens", func(b []byte, r *Record) []byte { return strconv.AppendInt(b, int64(r.CachedTokens), 10) }},
		{"transfer_bytes", "bytes", func(b []byte, r *Record) []byte { return strconv.AppendInt(b, r.TransferBytes, 10) }},
		{"tries", "–", func(b []byte, r *Record) []byte { return strconv.AppendInt(b, int64(r.Tries), 10) }},
		{"failed", "bool", func(b []byte, r *Record) []byte { return strconv.AppendBool(b, r.Failed) }},
		{"bucket", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.Bucket) }},
		{"bucket_policy", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.BucketPolicy) }},
		{"length_bucket_match", "bool", func(b []byte, r *Record) []byte {
			if r.Bucket == "" {
				return b
			}
			return strconv.AppendBool(b, r.LengthBucketMatch)
		}},
		{"bucket_predicted_prefix", "blocks", func(b []byte, r *Record) []byte {
			if r.Bucket == "" {
				return b
			}
			return strconv.AppendInt(b, int64(r.BucketPredictedPrefix), 10)
		}},
	}
	for i, name := range TTFTPartNames {
		cols = append(cols, PerRequestColumn{"ttft_" + name + "_ms", "ms", func(b []byte, r *Record) []byte {
			if !r.HasParts {
				return b
			}
			return appendMSSigned(b, r.Parts.At(i))
		}})
	}
	return append(cols,
		PerRequestColumn{"tpot_ms", "ms", func(b []byte, r *Record) []byte { return appendMS(b, r.TPOT) }},
		PerRequestColumn{"state", "–", func(b []byte, r *Record) []byte { return append(b, r.state()...) }},
		PerRequestColumn{"kv_cause", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.KVCause) }},
	)
}

// state is r's state column: State, or completed/failed when unset.
func (r *Record) state() string {
	if r.State != "" {
		return r.State
	}
	if r.Failed {
		return StateFailed
	}
	return StateCompleted
}

// AppendPerRequestRow appends r's row of per_request.csv, newline
// included, to b: the bytes encoding/csv writes for the same fields.
func AppendPerRequestRow(b []byte, r *Record) []byte {
	for i := range PerRequestColumns {
		if i > 0 {
			b = append(b, ',')
		}
		b = PerRequestColumns[i].Append(b, r)
	}
	return append(b, '\n')
}

// AppendPerRequestHeader appends per_request.csv's header line to b.
func AppendPerRequestHeader(b []byte) []byte {
	for i, name := range PerRequestHeader {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCSVField(b, name)
	}
	return append(b, '\n')
}

// perRequestBlock is the size of the blocks WritePerRequest hands to its
// writer.
const perRequestBlock = 256 << 10

// WritePerRequest writes per_request.csv rows sorted by request id (recs
// must be sorted; see MergeUnfinished for partial runs), in blocks of
// perRequestBlock bytes.
func WritePerRequest(w io.Writer, recs []Record) error {
	buf := AppendPerRequestHeader(make([]byte, 0, perRequestBlock+4<<10))
	for i := range recs {
		buf = AppendPerRequestRow(buf, &recs[i])
		if len(buf) >= perRequestBlock {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}

// appendMS appends d in ms with 3 decimals, nothing when d < 0.
func appendMS(b []byte, d time.Duration) []byte {
	if d < 0 {
		return b
	}
	return appendMSSigned(b, d)
}

// appendMSSigned appends d in ms with 3 decimals, negative values
// included: strconv.AppendFloat(b, float64(d)/1e6, 'f', 3, 64), byte for
// byte. Below 2^50 ns the float's error is under 0.2 ns, so unless d is
// within 1 ns of a half microsecond (a tie the float may round either
// way) the digits are d rounded to the microsecond, written with integer
// arithmetic; the other cases go through AppendFloat.
func appendMSSigned(b []byte, d time.Duration) []byte {
	const limit = 1 << 50
	if d <= -limit || d >= limit {
		return strconv.AppendFloat(b, float64(d)/1e6, 'f', 3, 64)
	}
	u := int64(d)
	if u < 0 {
		u = -u
	}
	rem := u % 1000
	if rem >= 499 && rem <= 501 {
		return strconv.AppendFloat(b, float64(d)/1e6, 'f', 3, 64)
	}
	us := u / 1000
	if rem > 501 {
		us++
	}
	if d < 0 {
		b = append(b, '-')
	}
	b = strconv.AppendInt(b, us/1000, 10)
	f := us % 1000
	return append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// appendCSVField appends s as encoding/csv's Writer (comma, no CRLF)
// writes a field: verbatim, or quoted with its quotes doubled when it
// holds a comma, a quote, a CR or LF, starts with a space, or is `\.`.
func appendCSVField(b []byte, s string) []byte {
	if !csvNeedsQuotes(s) {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

func csvNeedsQuotes(s string) bool {
	if s == "" {
		return false
	}
	if s == `\.` {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',', '"', '\r', '\n':
			return true
		}
	}
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

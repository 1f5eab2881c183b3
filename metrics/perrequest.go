package metrics

import (
	"io"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pdemu/pdemu/internal/appendnum"
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
		{"id", "–", func(b []byte, r *Record) []byte { return appendnum.Int(b, r.ID) }},
		{"session", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.Session) }},
		{"turn", "–", func(b []byte, r *Record) []byte { return appendnum.Int(b, int64(r.Turn)) }},
		{"arrival_ms", "ms", func(b []byte, r *Record) []byte { return appendMS(b, r.Arrival) }},
		{"ttft_ms", "ms", func(b []byte, r *Record) []byte { return appendMS(b, r.TTFT) }},
		{"e2e_ms", "ms", func(b []byte, r *Record) []byte { return appendMS(b, r.E2E) }},
		{"mode", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.Mode) }},
		{"reason", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.Reason) }},
		{"p_worker", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.P) }},
		{"d_worker", "–", func(b []byte, r *Record) []byte { return appendCSVField(b, r.D) }},
		{"input_tokens", "tokens", func(b []byte, r *Record) []byte { return appendnum.Int(b, int64(r.InputTokens)) }},
		{"output_tokens", "tokens", func(b []byte, r *Record) []byte { return appendnum.Int(b, int64(r.OutputTokens)) }},
		{"append_tokens", "tokens", func(b []byte, r *Record) []byte { return appendnum.Int(b, int64(r.AppendTokens)) }},
		{"cached_tokens", "tokens", func(b []byte, r *Record) []byte { return appendnum.Int(b, int64(r.CachedTokens)) }},
		{"transfer_bytes", "bytes", func(b []byte, r *Record) []byte { return appendnum.Int(b, r.TransferBytes) }},
		{"tries", "–", func(b []byte, r *Record) []byte { return appendnum.Int(b, int64(r.Tries)) }},
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
			return appendnum.Int(b, int64(r.BucketPredictedPrefix))
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
	u := uint64(d) // unsigned: cheaper divisions by constants
	if d < 0 {
		u = uint64(-d)
	}
	rem := u % 1000
	if rem >= 499 && rem <= 501 {
		return strconv.AppendFloat(b, float64(d)/1e6, 'f', 3, 64)
	}
	us := u / 1000
	if rem > 501 {
		us++
	}
	// The digits, written backwards two at a time into a buffer and
	// appended at once: us < 2^50/1000 has at most 13 digits.
	var buf [24]byte
	i := len(buf) - 4
	f := us % 1000
	buf[i], buf[i+1], buf[i+2], buf[i+3] = '.', byte('0'+f/100), twoDigits[f%100*2], twoDigits[f%100*2+1]
	for n := us / 1000; ; {
		if n < 10 {
			i--
			buf[i] = byte('0' + n)
			break
		}
		q := n % 100 * 2
		n /= 100
		i -= 2
		buf[i], buf[i+1] = twoDigits[q], twoDigits[q+1]
		if n == 0 {
			break
		}
	}
	if d < 0 {
		i--
		buf[i] = '-'
	}
	return append(b, buf[i:]...)
}

const twoDigits = "00010203040506070809" + "10111213141516171819" + "20212223242526272829" + "30313233343536373839" +
	"40414243444546474849" + "50515253545556575859" + "60616263646566676869" + "70717273747576777879" +
	"80818283848586878889" + "90919293949596979899"

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
		if csvQuoted[s[i]] {
			return true
		}
	}
	if c := s[0]; c < utf8.RuneSelf {
		return c == ' ' || c-'\t' <= '\r'-'\t' // unicode.IsSpace's ASCII spaces
	}
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

// csvQuoted[c] is set for the bytes that make encoding/csv quote a field
// wherever they are.
var csvQuoted = [256]bool{',': true, '"': true, '\r': true, '\n': true}

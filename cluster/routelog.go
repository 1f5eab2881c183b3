package cluster

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/pdemu/pdemu/internal/appendnum"
)

// The routing log's lines are encoded by hand, by appendLog, into one
// reused scratch buffer (lineEncoder), then copied out at their exact
// size into shared chunks: encoding/json's reflection allocated a few
// times per line.
// appendLog writes
// exactly the bytes json.Marshal writes for a *pdLog (HTML-safe string
// escaping, ES6 float formatting, omitempty on candidates_omitted; the
// golden tests hash routing_log.jsonl and TestAppendLogMatchesJSON
// compares the two on random lines); a line with a non-finite float,
// which json.Marshal refuses, goes through marshalLog's error line.

// appendLog appends l's JSON encoding (no newline) to b; ok is false, and
// b unchanged, when l holds a NaN or an infinity.
func appendLog(b []byte, l *pdLog) ([]byte, bool) {
	for i := range l.Tries {
		t := &l.Tries[i]
		if !finite(t.AtMS) {
			return b, false
		}
		for j := range t.Candidates {
			for _, k := range t.Candidates[j].Key {
				if !finite(k) {
					return b, false
				}
			}
		}
	}
	b = appendIntField(b, `{"id":`, l.ID)
	b = appendStrField(b, `,"session":"`, l.Session)
	b = appendIntField(b, `,"turn":`, int64(l.Turn))
	b = appendIntField(b, `,"input_tokens":`, int64(l.InputTokens))
	b = appendStrField(b, `,"policy":"`, l.Policy)
	b = appendJSONArray(append(b, `,"tries":`...), l.Tries, appendTry)
	b = strconv.AppendBool(append(b, `,"fallback":`...), l.Fallback)
	b = appendStrField(b, `,"fallback_reason":"`, l.FallbackReason)
	b = appendStrField(b, `,"mode":"`, l.Mode)
	b = appendStrField(b, `,"p_worker":"`, l.PWorker)
	b = appendStrField(b, `,"d_worker":"`, l.DWorker)
	return append(b, '}'), true
}

func appendTry(b []byte, t *pdTry) []byte {
	b = appendIntField(b, `{"try":`, int64(t.Try))
	b = appendJSONFloat(append(b, `,"at_ms":`...), t.AtMS)
	b = appendJSONArray(append(b, `,"candidates":`...), t.Candidates, appendCand)
	if t.Omitted != 0 {
		b = appendIntField(b, `,"candidates_omitted":`, int64(t.Omitted))
	}
	b = appendStrField(b, `,"chosen":"`, t.Chosen)
	b = appendStrField(b, `,"reply":"`, t.Reply)
	b = appendStrField(b, `,"reply_mode":"`, t.Mode)
	b = appendStrField(b, `,"reply_reason":"`, t.Reason)
	return append(b, '}')
}

func appendCand(b []byte, c *pdCand) []byte {
	b = appendStrField(b, `{"d_worker":"`, c.DWorker)
	b = append(b, `,"key":[`...)
	for k, v := range c.Key {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendJSONFloat(b, v)
	}
	b = appendIntField(b, `],"overlap":`, int64(c.Overlap))
	b = appendIntField(b, `,"rejects":`, int64(c.Rejects))
	if c.Eligible {
		return append(b, `,"eligible":true}`...)
	}
	return append(b, `,"eligible":false}`...)
}

// appendStrField appends key (a JSON object key with its quotes, colon,
// any leading comma or brace, and the value's opening quote) and s as a
// JSON string.
func appendStrField(b []byte, key, s string) []byte {
	return append(appendJSONStringBody(append(b, key...), s), '"')
}

// appendIntField appends key (as appendStrField) and n.
func appendIntField(b []byte, key string, n int64) []byte {
	return appendnum.Int(append(b, key...), n)
}

// appendJSONArray appends xs as encoding/json does a slice: null when nil,
// else a JSON array of the elements elem encodes.
func appendJSONArray[T any](b []byte, xs []T, elem func([]byte, *T) []byte) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = elem(b, &xs[i])
	}
	return append(b, ']')
}

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// appendJSONFloat is encoding/json's float64 encoding of a finite f.
func appendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	// Most of a line's floats are small integers (overlaps, counts): their
	// shortest form is the integer's digits (-0 aside), far cheaper than
	// AppendFloat's shortest-digit search.
	if i := int64(f); float64(i) == f && abs < 1e15 && (i != 0 || !math.Signbit(f)) {
		return appendnum.Int(b, i)
	}
	if abs < 1<<30 {
		// Times in ms are mostly whole ns (n/1e6); their shortest form is
		// n's decimal digits, far cheaper than AppendFloat's search.
		if n := math.Round(f * 1e6); n/1e6 == f && int64(n)%1e6 != 0 {
			return appendMicroDecimal(b, int64(n))
		}
	}
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 → e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendMicroDecimal appends n/1e6 as strconv.AppendFloat(b, f, 'f', -1,
// 64) does the float64 f = n/1e6 (correctly rounded), when 0 < |f| <
// 2^30 and f is no integer: the decimal n/1e6 rounds to f, and any other
// decimal as short lies at least 1e-6 from it, more than f's ulp
// (2^-22 at most), so it cannot round to f: n/1e6 with its trailing zeros
// stripped is f's shortest form. TestAppendJSONFloatMicros checks it
// against AppendFloat.
func appendMicroDecimal(b []byte, n int64) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	b = strconv.AppendInt(b, n/1e6, 10)
	frac := n % 1e6 // not 0: f is no integer
	digits := 6
	for frac%10 == 0 {
		frac /= 10
		digits--
	}
	b = append(b, '.')
	at := len(b)
	b = append(b, "000000"[:digits]...)
	for i := at + digits - 1; i >= at; i-- {
		b[i] = byte('0' + frac%10)
		frac /= 10
	}
	return b
}

const hexDigits = "0123456789abcdef"

// jsonSafe[c] is set for the ASCII bytes appendJSONString copies as they
// are (printable, not '"', '\\', '<', '>' or '&').
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString is encoding/json's HTML-safe encoding of s: <, > and &
// and control bytes as \u00XX (\b \f \n \r \t and \" \\ short), invalid
// UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	return append(appendJSONStringBody(append(b, '"'), s), '"')
}

// appendJSONStringBody is appendJSONString without the quotes.
func appendJSONStringBody(b []byte, s string) []byte {
	// Most strings (worker names, modes, reasons) need no escape: find the
	// first byte that may, and copy the rest at once when there is none.
	i := 0
	for i < len(s) && jsonSafe[s[i]] {
		i++
	}
	if i == len(s) {
		return append(b, s...)
	}
	start := 0
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

// marshalLog is l's line through encoding/json, or a parseable error line
// when it cannot be encoded (a non-finite float).
func marshalLog(l *pdLog) []byte {
	b, err := json.Marshal(l)
	if err != nil {
		return []byte(fmt.Sprintf(`{"id":%d,"error":%q}`, l.ID, err.Error()))
	}
	return b
}

// encodeLog is l's line: appendLog's bytes, or marshalLog's. Lines are
// cut from shared chunks of lineChunk bytes (one allocation per ~9 lines
// of a P/D run instead of one each), each line capped at its length so
// that nothing appended to it can reach its neighbour. A chunk stays in
// memory while any of its lines is held: a streaming run takes a line
// when its request ends (TakeRouteLog), so what the chunks pin beyond
// the lines of the requests in flight is at most a chunk per request
// that outlives the requests routed just after it.
func (e *lineEncoder) encodeLog(l *pdLog) []byte {
	b, ok := appendLog(e.scratch[:0], l)
	e.scratch = b
	if !ok {
		return marshalLog(l)
	}
	return e.cut(b)
}

// cut returns a copy of b cut from the encoder's current chunk (a new one
// when it is full; a line over a quarter of a chunk gets its own array).
func (e *lineEncoder) cut(b []byte) []byte {
	n := len(b)
	if cap(e.chunk)-len(e.chunk) < n {
		if n > lineChunk/4 {
			return append(make([]byte, 0, n), b...) // a long line: its own array
		}
		e.chunk = make([]byte, 0, lineChunk)
	}
	at := len(e.chunk)
	e.chunk = append(e.chunk, b...)
	return e.chunk[at : at+n : at+n]
}

// lineChunk is the size of the chunks routing_log lines are cut from (a
// size class of the Go allocator).
const lineChunk = 8 << 10

// lineEncoder encodes routing_log lines through one reused scratch buffer
// into chunk, the chunk lines are cut from: the P/D router's lines
// (encodeLog) and, through bucketEncoders, the bucket and global nodes'.
type lineEncoder struct{ scratch, chunk []byte }

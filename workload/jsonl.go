package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
)

// lineReader reads lines of any length (up to maxLine) and counts them.
type lineReader struct {
	br   *bufio.Reader
	buf  []byte
	line int
	err  error
}

const maxLine = 256 << 20

func newLineReader(r io.Reader) *lineReader {
	if br, ok := r.(*bufio.Reader); ok {
		return &lineReader{br: br}
	}
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next non-blank line (without the newline) or io.EOF. The
// slice is valid until the next call. A line that fits the reader's
// buffer is returned where it lies there (no copy of the trace's bytes);
// a longer one, or a last line without a newline, is gathered in buf.
func (l *lineReader) next() ([]byte, error) {
	for {
		if l.err != nil {
			return nil, l.err
		}
		line, err := l.br.ReadSlice('\n')
		if err != nil {
			if line, err = l.gather(line, err); err != nil {
				return nil, err
			}
		}
		l.line++
		if b := bytes.TrimSpace(line); len(b) > 0 {
			return b, nil
		}
	}
}

// gather completes the line ReadSlice began with frag and err (not nil)
// in buf: the rest of a line longer than the reader's buffer, or the last
// line (l.err is then io.EOF; io.EOF itself when there is none).
func (l *lineReader) gather(frag []byte, err error) ([]byte, error) {
	l.buf = append(l.buf[:0], frag...)
	for err == bufio.ErrBufferFull {
		if len(l.buf) > maxLine {
			l.line++
			l.err = fmt.Errorf("line %d longer than %d bytes", l.line, maxLine)
			return nil, l.err
		}
		frag, err = l.br.ReadSlice('\n')
		l.buf = append(l.buf, frag...)
	}
	if err != nil {
		if err != io.EOF {
			l.err = err
			return nil, err
		}
		l.err = io.EOF
		if len(l.buf) == 0 {
			return nil, io.EOF
		}
	}
	return l.buf, nil
}

// idList is a JSON array of unsigned 64-bit hash ids, parsed by hand (the
// arrays dominate trace files; encoding/json's reflection path is ~10×
// slower). encoding/json has validated the syntax before UnmarshalJSON.
type idList []uint64

// UnmarshalJSON implements json.Unmarshaler.
func (l *idList) UnmarshalJSON(b []byte) error {
	out, err := parseIDs(b, "hash_ids", *l)
	if err == nil {
		*l = out
	}
	return err
}

// newIDList is idList for the compact form's new_hash_ids.
type newIDList []uint64

// UnmarshalJSON implements json.Unmarshaler.
func (l *newIDList) UnmarshalJSON(b []byte) error {
	out, err := parseIDs(b, "new_hash_ids", *l)
	if err == nil {
		*l = out
	}
	return err
}

// parseIDs parses the JSON array b of unsigned 64-bit integers into
// out[:0] (allocated when nil); errors name field.
func parseIDs(b []byte, field string, out []uint64) ([]uint64, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, badField(field, "must be an array of unsigned integers")
	}
	out = out[:0]
	if out == nil {
		out = make([]uint64, 0, len(b)/6+1)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, nil
	}
	for k := 0; ; k++ {
		i = skipSpace(b, i)
		start := i
		var v uint64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			d := uint64(b[i] - '0')
			if v > (math.MaxUint64-d)/10 {
				return nil, badField(field, "element %d overflows 64 bits", k)
			}
			v = v*10 + d
			i++
		}
		if i == start || (i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E')) || (b[start] == '0' && i-start > 1) {
			end := start
			for end < len(b) && b[end] != ',' && b[end] != ']' {
				end++
			}
			return nil, badField(field, "element %d (%.24s) is not an unsigned 64-bit integer", k, bytes.TrimSpace(b[start:end]))
		}
		out = append(out, v)
		i = skipSpace(b, i)
		if i >= len(b) {
			return nil, badField(field, "unterminated array")
		}
		if b[i] == ']' {
			break
		}
		if b[i] != ',' {
			return nil, badField(field, "unexpected %q in array", b[i])
		}
		i++
	}
	return out, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// nextElem steps over what follows an element of the JSON object or array
// at b that ends in end ('}' or ']'): space, then a ',' (next is the
// following element's start, after space) or end (done; next is the index
// after it). next is -1 on anything else, or at the end of b.
func nextElem(b []byte, i int, end byte) (next int, done bool) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return -1, false
	}
	if b[i] == end {
		return i + 1, true
	}
	if b[i] != ',' {
		return -1, false
	}
	return skipSpace(b, i+1), false
}

// errLineTooLong is the error of a lineLimit.
var errLineTooLong = errors.New("line too long")

// lineLimit passes r through, failing with errLineTooLong once a line is
// longer than max bytes: readers that buffer whole records (encoding/csv)
// are bounded like lineReader.
type lineLimit struct {
	r    io.Reader
	max  int
	n    int // bytes since the last newline
	line int // 1-based line being read
}

func newLineLimit(r io.Reader, max int) *lineLimit { return &lineLimit{r: r, max: max, line: 1} }

func (l *lineLimit) Read(p []byte) (int, error) {
	k, err := l.r.Read(p)
	for i, b := range p[:k] {
		if b == '\n' {
			l.n = 0
			l.line++
			continue
		}
		l.n++
		if l.n > l.max {
			return i, fmt.Errorf("line %d longer than %d bytes: %w", l.line, l.max, errLineTooLong)
		}
	}
	return k, err
}

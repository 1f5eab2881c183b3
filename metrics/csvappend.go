package metrics

import (
	"bytes"
	"encoding/csv"
	"io"
	"strings"
	"time"
)

// csvSeg is fields as encoding/csv writes them inside a record (each
// quoted where it would quote it, comma-separated, no line end): the
// constant columns of a row, encoded once, so that the append-style
// writers below write what csv.Writer writes, byte for byte.
func csvSeg(fields ...string) string {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	_ = cw.Write(fields) // a bytes.Buffer does not fail
	cw.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// appendFMS is fms appended to b (numbers never need CSV quotes):
// appendMS, whose digits are strconv.AppendFloat(b, float64(d)/1e6, 'f',
// 3, 64)'s without its fixed-precision search.
func appendFMS(b []byte, d time.Duration) []byte { return appendMS(b, d) }

// rowBuf collects rows and writes them to w in blocks.
type rowBuf struct {
	w   io.Writer
	b   []byte
	err error
}

const rowBlock = 64 << 10

func newRowBuf(w io.Writer) *rowBuf { return &rowBuf{w: w, b: make([]byte, 0, rowBlock+512)} }

// row ends the row being appended to r.b; it writes the block when full.
func (r *rowBuf) row() error {
	r.b = append(r.b, '\n')
	if len(r.b) >= rowBlock {
		return r.flush()
	}
	return nil
}

func (r *rowBuf) flush() error {
	if r.err == nil && len(r.b) > 0 {
		_, r.err = r.w.Write(r.b)
	}
	r.b = r.b[:0]
	return r.err
}

// writeHeader writes header as csv.Writer does.
func writeHeader(w io.Writer, header []string) error {
	_, err := io.WriteString(w, csvSeg(header...)+"\n")
	return err
}

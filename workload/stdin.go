package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"
)

// Stdin is the trace path that reads the trace from standard input
// (pdemu run --trace -): the one way to replay a pipe. Open refuses every
// other non-regular file (a FIFO, a device) before it could block.
const Stdin = "-"

// stdin is standard input (tests replace it).
var stdin io.Reader = os.Stdin

// Digester is implemented by sources that digest their trace as they
// read it (standard input, which cannot be read twice). ok is false until
// the trace was read to its end: the digest of a prefix is never given
// as the trace's.
type Digester interface {
	Digest() (digest string, ok bool)
}

// hashReader hashes what it reads and notes the end of its input.
type hashReader struct {
	r   io.Reader
	h   hash.Hash
	eof bool
}

func (h *hashReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	if err == io.EOF {
		h.eof = true
	}
	return n, err
}

// digestSource is a source read from standard input, with its digest.
type digestSource struct {
	Source
	hr *hashReader
}

func (d digestSource) Digest() (string, bool) {
	if !d.hr.eof {
		return "", false
	}
	return "sha256:" + hex.EncodeToString(d.hr.h.Sum(nil)), true
}

func (d digestSource) Warnings() []string {
	if w, ok := d.Source.(Warner); ok {
		return w.Warnings()
	}
	return nil
}

func (d digestSource) Skipped() int {
	if s, ok := d.Source.(Skipper); ok {
		return s.Skipped()
	}
	return 0
}

// Close closes the wrapped source if it is an io.Closer (never stdin).
func (d digestSource) Close() error {
	if c, ok := d.Source.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// openStdin reads the trace from standard input, digesting it as it goes.
func openStdin(format string, opts LoadOptions) (Source, error) {
	hr := &hashReader{r: stdin, h: sha256.New()}
	src, err := OpenReader(hr, "stdin", format, opts)
	if err != nil {
		return nil, err
	}
	return digestSource{Source: src, hr: hr}, nil
}

package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
)

// Stdin is the trace path that reads the trace from standard input
// (pdemu run --trace -): the one way to replay a pipe. Open refuses every
// other non-regular file (a FIFO, a device) before it could block.
const Stdin = "-"

// A trace on standard input is read into memory whole, once per process
// (at most maxStdinBytes), digested as it is read, and replayed from
// memory each time the process opens it.

// stdin is standard input (tests replace it).
var stdin io.Reader = os.Stdin

// Digester is implemented by sources that digest their trace as they
// read it (standard input, which cannot be read twice). ok is false when
// no digest of the whole trace is known: the digest of a prefix is never
// given as the trace's.
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
	wrapped // Close: never stdin, which is not the wrapped source
	hr      *hashReader
	digest  string // of the whole stream
}

// Digest is the whole stream's: it was read whole before the replay.
func (d digestSource) Digest() (string, bool) { return d.digest, true }

// maxStdinBytes bounds a trace read from standard input.
const maxStdinBytes = 1 << 30

// stdinTrace is standard input read once: a process may open the trace
// more than once (pdemu run's preflight, then the run), and a pipe can be
// read only once.
var stdinTrace struct {
	once   sync.Once
	data   []byte
	digest string
	err    error
}

// openStdin replays the trace read from standard input (read whole, at
// most maxStdinBytes, and digested, the first time).
func openStdin(format string, opts LoadOptions) (Source, error) {
	st := &stdinTrace
	st.once.Do(func() {
		hr := &hashReader{r: io.LimitReader(stdin, maxStdinBytes+1), h: sha256.New()}
		st.data, st.err = io.ReadAll(hr)
		if st.err == nil && len(st.data) > maxStdinBytes {
			st.err = fmt.Errorf("workload: stdin: a trace on standard input may be at most %d bytes (give a file instead)", maxStdinBytes)
		}
		st.digest = "sha256:" + hex.EncodeToString(hr.h.Sum(nil))
	})
	if st.err != nil {
		return nil, st.err
	}
	hr := &hashReader{r: bytes.NewReader(st.data), h: sha256.New()}
	src, err := OpenReader(hr, "stdin", format, opts)
	if err != nil {
		return nil, err
	}
	return digestSource{wrapped: wrapped{src}, hr: hr, digest: st.digest}, nil
}

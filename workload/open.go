package workload

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/pdemu/pdemu/internal/regular"
)

// Open opens a trace file (or claude-code directory) in the given format;
// format "" detects it (see Detect). The returned Source also implements
// io.Closer and Skipper; close it when done. Path Stdin reads standard
// input (the Source is then a Digester); any other path must be a regular
// file or a claude-code directory.
func Open(path, format string, opts LoadOptions) (Source, error) {
	if path == Stdin {
		return openStdin(format, opts)
	}
	src, err := open(path, format, opts)
	var nr *regular.NotRegularError
	if errors.As(err, &nr) && nr.Pipe() {
		err = fmt.Errorf("%w (to replay a pipe, give it on standard input: --trace %s)", err, Stdin)
	}
	return src, err
}

func open(path, format string, opts LoadOptions) (Source, error) {
	if err := opts.validate(); err != nil { // before any file is opened
		return nil, err
	}
	if format == "" {
		f, err := Detect(path)
		if err != nil {
			return nil, err
		}
		format = f
	}
	t, ok := formatOf(format)
	if !ok {
		return nil, unknownFormat(format)
	}
	return t.open(path, opts)
}

// OpenReader reads a trace from r; name is used in error messages. It
// supports every format (claude-code: a single session document); format
// "" detects it from the first record. Nothing is closed by the Source.
func OpenReader(r io.Reader, name, format string, opts LoadOptions) (Source, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if format == "" {
		f, err := detectReader(br)
		if err != nil {
			return nil, fmt.Errorf("workload: %s: %w", name, err)
		}
		format = f
	}
	t, ok := formatOf(format)
	if !ok {
		return nil, unknownFormat(format)
	}
	return t.read(br, name, opts)
}

// asSource returns a nil interface (not a typed nil pointer) on error.
func asSource[T Source](s T, err error) (Source, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// fileCloser closes the file under a streaming loader.
type fileCloser struct{ f *os.File }

// own hands f to the loader: its Close closes f.
func (c *fileCloser) own(f *os.File) { c.f = f }

// openStreaming opens the regular file path and makes the streaming loader
// newLoader of it (path names it in errors), which then owns the file; on
// an error the file is closed.
func openStreaming[L interface{ own(*os.File) }](path string, opts LoadOptions, newLoader func(io.Reader, string, LoadOptions) (L, error)) (L, error) {
	f, err := regular.Open(path)
	if err != nil {
		var none L
		return none, fmt.Errorf("workload: %w", err)
	}
	l, err := newLoader(f, path, opts)
	if err != nil {
		f.Close()
		return l, err
	}
	l.own(f)
	return l, nil
}

// Close closes the underlying file (idempotent).
func (c *fileCloser) Close() error {
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	return err
}

func claudeFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "trace_*.json"))
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	sort.Strings(files)
	return files, nil
}

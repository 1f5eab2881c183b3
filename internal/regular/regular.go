// Package regular opens input files that must be regular files
// (scenarios, traces) without ever blocking on them.
//
// Contract: Open never blocks in open(2): the file is opened with
// O_NONBLOCK (a FIFO without a writer opens at once instead of waiting
// for one) and refused with a precise error unless fstat says it is a
// regular file, so a FIFO, a device (/dev/zero) or a socket named as an
// input is an error, never a hang or an endless read. On a regular file
// O_NONBLOCK changes nothing.
package regular

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Open opens path for reading if it is a regular file.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: &NotRegularError{Mode: fi.Mode()}}
	}
	return f, nil
}

// ReadAll reads the regular file path (see Open) whole, if it holds at
// most limit bytes; over reports a larger file (then b is nil), read no
// further than one byte past limit.
func ReadAll(path string, limit int) (b []byte, over bool, err error) {
	f, err := Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	b, err = io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, false, err
	}
	if len(b) > limit {
		return nil, true, nil
	}
	return b, false, nil
}

// NotRegularError is why Open refused a file (inside an *fs.PathError).
type NotRegularError struct{ Mode fs.FileMode }

func (e *NotRegularError) Error() string { return fmt.Sprintf("not a regular file (%s)", kind(e.Mode)) }

// Pipe reports whether the file was a FIFO (a pipe, such as <(cmd)).
func (e *NotRegularError) Pipe() bool { return e.Mode&fs.ModeNamedPipe != 0 }

// kind names a non-regular file mode.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

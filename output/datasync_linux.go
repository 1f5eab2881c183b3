package output

import (
	"errors"
	"os"
	"syscall"
)

// datasync makes f's data durable, and the metadata needed to read it back
// (its size, its blocks): fdatasync(2). Unlike fsync it does not write the
// inode for a change of its times alone, which is all a file --force
// rewrote in place with the same length (outDir) changes besides its data.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = syscall.Fdatasync(int(fd)); !errors.Is(serr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}

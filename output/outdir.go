package output

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// outDir is a directory prepare readied for a run's files. With --force
// the previous run's files are not removed but taken over: each is
// renamed to a temporary name (spareName) and the new run's file of the
// same name is written over it from its start rather than into a new
// file, cut to the new length when complete (seal), then renamed into
// place as any temporary file. On ext4 a new inode
// costs a scan past every inode deleted in the last minutes (the
// allocator's recently-deleted check): re-running into the same --out,
// as a benchmark or an edit-run loop does, made creating the nine
// temporary files ~8 % of the Mooncake 1P3D run's CPU, and removing the
// old ones ~1 %. Writing over the old file rather than emptying it first
// reuses its blocks and cached pages (a re-run writes the same bytes):
// emptying it freed them, ~1.2 % of that run's CPU, to allocate them
// again.
//
// A file is taken over only if it is a regular file, has no other link
// and belongs to this process's user (spareOK); otherwise it is removed,
// as before, and the new file is created. What readers see is unchanged
// for anyone opening a file by name (the new content appears whole, at
// the rename); a process that kept a previous run's file open sees it
// rewritten rather than keeping the old content.
type outDir struct {
	path   string
	spares map[string]bool   // names (Files) whose previous file waits under spareName
	reused map[*os.File]bool // spares being written over (seal cuts them)
}

// spareName is the temporary name a previous run's file waits under.
func spareName(name string) string { return tmpPrefix + name + "-spare" }

// keep takes over the previous run's file name (prepare, with force).
func (d *outDir) keep(name string) error {
	if err := os.Rename(filepath.Join(d.path, name), filepath.Join(d.path, spareName(name))); err != nil {
		return err
	}
	if d.spares == nil {
		d.spares = map[string]bool{}
	}
	d.spares[name] = true
	return nil
}

// create returns an empty temporary file for name: the previous run's
// file of that name if prepare took it over and it can be reused, else a
// new one.
func (d *outDir) create(name string) (*os.File, error) {
	if d.spares[name] {
		if f := d.reuse(name); f != nil {
			return f, nil
		}
	}
	return os.CreateTemp(d.path, tmpPrefix+name+"-*")
}

// reuse opens the spare of name to be written over from its start, or
// returns nil (the spare then stays for drop).
func (d *outDir) reuse(name string) *os.File {
	f, err := os.OpenFile(filepath.Join(d.path, spareName(name)), os.O_RDWR|oNoFollow, 0)
	if err != nil {
		return nil
	}
	if fi, err := f.Stat(); err != nil || !spareOK(fi) {
		f.Close()
		return nil
	}
	delete(d.spares, name)
	if d.reused == nil {
		d.reused = map[*os.File]bool{}
	}
	d.reused[f] = true
	return f
}

// seal readies a finished temporary file of d for the rename that makes
// it visible: cut to what was written (a reused spare), readable by all,
// on disk, closed.
func (d *outDir) seal(tmp *os.File) error {
	if d.reused[tmp] {
		delete(d.reused, tmp)
		n, err := tmp.Seek(0, io.SeekCurrent) // the files are written sequentially from 0
		if err != nil {
			return err
		}
		if err := tmp.Truncate(n); err != nil {
			return err
		}
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := datasync(tmp); err != nil { // on disk before the rename makes it visible
		return err
	}
	return tmp.Close()
}

// drop removes the spares no new file reused (a file --outputs leaves
// out, a run that failed before writing). Call it when done; it may be
// called again.
func (d *outDir) drop() error {
	var errs []error
	for name := range d.spares {
		if err := os.Remove(filepath.Join(d.path, spareName(name))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		delete(d.spares, name)
	}
	return errors.Join(errs...)
}

package actors

import (
	"os"
	"syscall"
	"time"
)

// fileKeyOf is path's fileKey from its stat (ok false: not known here).
func fileKeyOf(path string, st os.FileInfo) (fileKey, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{path: path, dev: uint64(sys.Dev), ino: sys.Ino, size: st.Size(), mtime: st.ModTime(),
		ctime: time.Unix(int64(sys.Ctim.Sec), int64(sys.Ctim.Nsec))}, true
}

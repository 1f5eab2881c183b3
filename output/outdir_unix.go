//go:build unix

package output

import (
	"os"
	"syscall"
)

// oNoFollow makes opening a spare that is a symbolic link fail.
const oNoFollow = syscall.O_NOFOLLOW

// spareOK reports whether a previous run's file may be rewritten in
// place: a regular file of this user with no other link (rewriting a
// hard link would change the other name's content).
func spareOK(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && st.Nlink == 1 && int(st.Uid) == os.Getuid()
}

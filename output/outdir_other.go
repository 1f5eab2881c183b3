//go:build !unix

package output

import "os"

const oNoFollow = 0

// spareOK is false off unix: the previous run's files are removed and
// new ones created.
func spareOK(os.FileInfo) bool { return false }

//go:build !linux

package output

import "os"

// datasync is f.Sync where fdatasync(2) is not used.
func datasync(f *os.File) error { return f.Sync() }

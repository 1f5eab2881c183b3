//go:build !linux

package actors

import "os"

// fileKeyOf: without the status-change time at hand, no digest is
// remembered (every run hashes its trace).
func fileKeyOf(string, os.FileInfo) (fileKey, bool) { return fileKey{}, false }

//go:build !linux

package state

import "os"

// openPath opens dir (only Linux names a socket through it).
func openPath(dir string) (*os.File, error) { return os.Open(dir) }

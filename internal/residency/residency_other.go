//go:build !linux

package residency

// ReleaseBinaryPages does nothing outside Linux.
func ReleaseBinaryPages() {}

package residency

import "unsafe"

// unsafeSlice is the memory from start to end as a byte slice, for
// madvise: it is never read or written through.
func unsafeSlice(start, end uintptr) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(start)), end-start) //nolint:govet // an address from /proc/self/maps, not a Go pointer
}

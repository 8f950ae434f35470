// Package residency hands back to the kernel the pages of kubediff's own
// binary that only its start-up used.
//
// Why: at start, package initialisation (the Kubernetes API types'
// registration above all) touches code and data spread over most of the
// 64 MB binary, and the kernel maps file pages around each touched one
// (fault-around, and large page-cache folios on recent kernels). Those
// pages then count in the process's RSS for as long as it runs, though a
// watching kubediff uses a small part of them: on an empty cluster 42 of
// its 56 MB resident were the binary's pages. Unmapping the binary's
// read-only segments once synced (madvise MADV_DONTNEED) leaves them in
// the page cache, shared and reclaimable; what kubediff goes on using is
// mapped again on first use, once.
package residency

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ReleaseBinaryPages unmaps the read-only, file-backed mappings of the
// running executable (code, read-only data, function tables). They are
// never written, so nothing is lost: a page used again is read back from
// the page cache. Writable mappings (.data, .bss) are left alone.
func ReleaseBinaryPages() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		start, end, ok := readOnlyMappingOf(sc.Text(), exe)
		if ok {
			// By address: the range is the executable's, not Go memory.
			_, _, _ = unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_DONTNEED)
		}
	}
}

// readOnlyMappingOf parses a /proc/self/maps line: the range of a mapping
// of path that is not writable.
func readOnlyMappingOf(line, path string) (start, end uintptr, ok bool) {
	f := strings.Fields(line)
	if len(f) < 6 || f[5] != path || strings.Contains(f[1], "w") {
		return 0, 0, false
	}
	lo, hi, found := strings.Cut(f[0], "-")
	s, err1 := strconv.ParseUint(lo, 16, 64)
	e, err2 := strconv.ParseUint(hi, 16, 64)
	if !found || err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}
